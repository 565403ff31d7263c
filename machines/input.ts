/**
 * A machine's input, for its `context` function. XState's pure `initialTransition()` and
 * `transition()` (what the actor host steps every machine with) build a throwaway actor on every
 * call, and that actor's constructor computes the machine's initial snapshot without any input;
 * XState then drops it, error or not. A context function that read a field of the missing input
 * would throw a TypeError there, and V8 renders that error's message from the source: some 80 µs
 * of CPU per order in the service (bench:orders CPU profile), several times the step itself. The
 * missing input is refused here with one error made once, which costs next to nothing.
 */

/** What a context function throws when it is given no input (one object: nothing is captured per throw). */
export const NO_INPUT: Error = new Error('machine started without input');

/**
 * `input`, or {@link NO_INPUT} thrown when there is none (an actor XState builds for a pure step).
 * @throws {Error} {@link NO_INPUT} when `input` is undefined.
 */
export function given<T>(input: T | undefined): T {
  if (input === undefined) throw NO_INPUT;
  return input;
}
