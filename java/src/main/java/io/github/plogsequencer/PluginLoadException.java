package io.github.plogsequencer;

/** The plugin could not be loaded or instantiated (a missing or broken module). */
public final class PluginLoadException extends PlogSequencerException {
    private static final long serialVersionUID = 1L;

    PluginLoadException(String message, Throwable cause) {
        super(message, cause);
    }
}
