import { dec } from '../../../engine/decimal.js';
import type { Capture, CaptureEvent } from '../../../engine/venue/capture.js';
import type { Catalogue } from '../../../engine/venue/markets.js';

/** Outcome tokens A ("Up") and B ("Down") of the one market C of {@link binaryCaptureCatalogue}. */
export const A = '111';
export const B = '222';
export const C = '0x' + 'c'.repeat(64);

/**
 * A catalogue of one binary market C (tokens A/B, minimum 5 shares), both tokens driven by a
 * capture holding `events` (empty: the test applies events itself).
 * @param tick - the market's tick, decimal probability.
 */
export function binaryCaptureCatalogue(tick: string, events: CaptureEvent[] = [], startMs = 0, endMs = 0): Catalogue {
  const tickSize = dec(tick);
  const min = dec(5);
  const capture: Capture = {
    markets: [],
    events,
    startMs,
    endMs,
    skips: { errorRows: 0, unusable: 0, naValues: 0, malformed: 0, losingResolutionRows: 0 },
  };
  return {
    markets: [
      {
        conditionId: C,
        question: 'Q?',
        slug: 'q',
        endDateIso: null,
        tickSize,
        minSize: min,
        negRisk: false,
        tokens: [
          { tokenId: A, outcome: 'Up', price: dec('0.5') },
          { tokenId: B, outcome: 'Down', price: dec('0.5') },
        ],
      },
    ],
    tokens: new Map([
      [
        A,
        {
          tokenId: A,
          outcome: 'Up',
          conditionId: C,
          question: 'Q?',
          referencePrice: dec('0.5'),
          tickSize,
          minSize: min,
          complementTokenId: B,
        },
      ],
      [
        B,
        {
          tokenId: B,
          outcome: 'Down',
          conditionId: C,
          question: 'Q?',
          referencePrice: dec('0.5'),
          tickSize,
          minSize: min,
          complementTokenId: A,
        },
      ],
    ]),
    replay: {
      tokenId: A,
      points: [
        { tSec: 0, price: dec('0.5') },
        { tSec: 600, price: dec('0.6') },
      ],
    },
    capture,
    captureTokens: new Set([A, B]),
  };
}
