/**
 * What the data reads tell of a market and an outcome token (question, outcome, slug): the venue's
 * listed markets, and the markets of the loaded real history (engine/data/real-history.ts), made
 * known from the history rows' own fields. Condition ids are matched in lower case.
 */
import type { VenuePort } from '../venue/port.js';

/** A market as the data reads show it. */
export interface MarketRef {
  conditionId: string;
  /** The market's question (the history's `title`; for a history row without one, its slug). */
  question: string;
  /** The market's slug, or null when unknown. */
  slug: string | null;
  /** The event's slug, or null when unknown. */
  eventSlug: string | null;
  /** Whether the venue lists it (tradable here), or it is known from the loaded history only. */
  listed: boolean;
}

/** An outcome token as the data reads show it. */
export interface TokenRef {
  tokenId: string;
  conditionId: string;
  /** Outcome name ("Yes", "Up", …). */
  outcome: string;
  /** Position of the outcome in its market (0, 1, …), or null when unknown. */
  outcomeIndex: number | null;
}

/** The fields of a history row that make its market and token known. */
export interface MarketFacts {
  conditionId: string;
  tokenId: string;
  outcome: string;
  outcomeIndex: number | null;
  title: string | null;
  slug: string | null;
  eventSlug: string | null;
}

/** Markets and tokens of the venue and of the loaded history. */
export class MarketRegistry {
  private readonly markets = new Map<string, MarketRef>();
  private readonly tokens = new Map<string, TokenRef>();
  /** The tokens of each market of the history, in the order they became known. */
  private readonly marketTokens = new Map<string, string[]>();
  /** Markets whose question came from a row's title. */
  private readonly titled = new Set<string>();

  constructor(private readonly venue: Pick<VenuePort, 'market' | 'token'>) {}

  /**
   * Makes the market and token of a history row known. A row with a title names the market's
   * question; until one does, the question is the event slug (or the slug, or the condition id).
   */
  learn(f: MarketFacts): void {
    const conditionId = f.conditionId.toLowerCase();
    const known = this.markets.get(conditionId);
    if (!known || (f.title && !this.titled.has(conditionId))) {
      this.markets.set(conditionId, {
        conditionId,
        question: f.title ?? f.eventSlug ?? f.slug ?? conditionId,
        slug: f.slug ?? known?.slug ?? null,
        eventSlug: f.eventSlug ?? known?.eventSlug ?? null,
        listed: false,
      });
      if (f.title) this.titled.add(conditionId);
    }
    if (!this.tokens.has(f.tokenId)) {
      this.tokens.set(f.tokenId, { tokenId: f.tokenId, conditionId, outcome: f.outcome, outcomeIndex: f.outcomeIndex });
      const list = this.marketTokens.get(conditionId);
      if (list) list.push(f.tokenId);
      else this.marketTokens.set(conditionId, [f.tokenId]);
    }
  }

  /**
   * The outcome tokens of market `conditionId` (any case): the venue's, and those the history made
   * known under it; none for a market neither knows.
   */
  tokensOf(conditionId: string): string[] {
    const id = conditionId.toLowerCase();
    const listed = this.venue.market(id)?.tokens.map((t) => t.tokenId) ?? [];
    const learned = this.marketTokens.get(id) ?? [];
    return learned.length ? [...new Set([...listed, ...learned])] : listed;
  }

  /** The market `conditionId` (any case), or undefined when neither the venue nor the history knows it. */
  marketOf(conditionId: string): MarketRef | undefined {
    const id = conditionId.toLowerCase();
    const m = this.venue.market(id);
    if (m) return { conditionId: id, question: m.question, slug: m.slug, eventSlug: null, listed: true };
    return this.markets.get(id);
  }

  /** The outcome token `tokenId`, or undefined when neither the venue nor the history knows it. */
  tokenOf(tokenId: string): TokenRef | undefined {
    const t = this.venue.token(tokenId);
    if (t) {
      const index = this.venue.market(t.conditionId)?.tokens.findIndex((x) => x.tokenId === tokenId) ?? -1;
      return { tokenId, conditionId: t.conditionId, outcome: t.outcome, outcomeIndex: index >= 0 ? index : null };
    }
    return this.tokens.get(tokenId);
  }
}
