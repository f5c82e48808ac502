package io.github.plogsequencer;

/**
 * How many numbers the sequencer holds in memory, by where.
 *
 * @param cached numbers in the cache
 * @param unflushed values waiting to be written (and in flight)
 * @param transaction numbers of the open transaction
 */
public record HeldNumbers(long cached, long unflushed, long transaction) {}
