package io.github.plogsequencer;

/**
 * A sequence of a workspace kind: the payload of the refusals {@code unknown-seq-id} and
 * {@code sequence-exhausted}.
 *
 * @param kind the workspace kind (u16)
 * @param seq the sequence (u16)
 */
public record SeqRef(int kind, int seq) {
    @Override
    public String toString() {
        return "kind " + kind + " sequence " + seq;
    }
}
