package io.github.plogsequencer;

/**
 * The plugin trapped during a call: a bug of the guest, a broken host promise (a storage that
 * returned what the contract cannot carry is reported as a storage failure instead), the
 * memory cap reached, or the calling thread interrupted. The call's effect is lost; the
 * sequencer has already dropped the instance and made a new one over the same storage, which
 * actualizes from the PLog, so no number is handed out twice and the next call works (it may
 * answer "not now" until the actualization ends). The cause is the runtime's exception.
 */
public final class TrappedException extends PlogSequencerException {
    private static final long serialVersionUID = 1L;

    TrappedException(String message, Throwable cause) {
        super(message, cause);
    }
}
