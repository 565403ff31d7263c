/**
 * Positions on the simulated chain (engine/data/records.ts {@link ChainPosition}): the venue gives
 * every trade and every wallet operation one when it runs, and journals where the sequence is, so
 * that a fill reported again after a restart carries the position it had and a new event never
 * takes a position already given.
 *
 * A block lasts {@link BLOCK_SECONDS}: an event's block is the venue clock's seconds rounded down to
 * it (never earlier than the last block given: a clock set back does not reorder the chain); its log
 * index counts the events of that block from 0.
 */
import { BLOCK_SECONDS, type ChainPosition } from '../data/records.js';

/** Where the chain's sequence is, as journaled: the last block given and the next log index in it. */
export interface ChainRow {
  /** Block time, integer seconds (a multiple of {@link BLOCK_SECONDS}). */
  block: number;
  /** Log index the next event of `block` gets. */
  next: number;
}

/** The block (integer seconds, a multiple of {@link BLOCK_SECONDS}) of an instant in epoch ms. */
export function blockOf(atMs: number): number {
  const s = Math.floor(atMs / 1000);
  return s - (((s % BLOCK_SECONDS) + BLOCK_SECONDS) % BLOCK_SECONDS);
}

/** The venue's chain sequence: hands out positions in chain order. */
export class ChainClock {
  private block = 0;
  private next = 0;

  /**
   * The next position, for an event at `atMs` (epoch ms) of the transaction `transactionHash`.
   * @returns a position after every one given before (and every one recovered with {@link load}).
   */
  position(atMs: number, transactionHash: string): ChainPosition {
    const b = blockOf(atMs);
    if (b > this.block) {
      this.block = b;
      this.next = 0;
    }
    return { blockTimestamp: this.block, logIndex: this.next++, transactionHash };
  }

  /** Where the sequence is (journaled with each operation that took positions, and in checkpoints). */
  get row(): ChainRow {
    return { block: this.block, next: this.next };
  }

  /** Recovery: continues after `r` (a journaled row) unless the sequence is already past it. */
  load(r: ChainRow): void {
    if (r.block > this.block || (r.block === this.block && r.next > this.next)) {
      this.block = r.block;
      this.next = r.next;
    }
  }
}
