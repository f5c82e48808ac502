package io.github.plogsequencer;

/**
 * Everything this package throws on its own account: a refusal ({@link SequencerException}),
 * a trap of the plugin ({@link TrappedException}) or a plugin that cannot be loaded
 * ({@link PluginLoadException}). Never a raw exception of the WebAssembly runtime.
 */
public abstract class PlogSequencerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PlogSequencerException(String message, Throwable cause) {
        super(message, cause);
    }
}
