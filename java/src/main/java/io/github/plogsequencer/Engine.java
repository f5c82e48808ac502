package io.github.plogsequencer;

/** How Chicory runs the plugin. */
public enum Engine {
    /**
     * The module compiled to JVM bytecode at build time (Chicory's build-time compiler): the
     * default, and much the faster.
     */
    COMPILED,
    /** Chicory's interpreter over the module as shipped ({@code sequencer-core.wasm} in the jar). */
    INTERPRETER
}
