package io.github.plogsequencer;

/**
 * The offsets of an event the facade began ({@link Sequencer#startEvent}).
 *
 * @param plogOffset the event's offset in the partition's PLog
 * @param wlogOffset the event's offset in its workspace's WLog
 */
public record EventOffsets(long plogOffset, long wlogOffset) {}
