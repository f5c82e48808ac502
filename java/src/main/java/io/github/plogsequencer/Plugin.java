package io.github.plogsequencer;

import com.dylibso.chicory.runtime.ByteArrayMemory;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wasm.Parser;
import com.dylibso.chicory.wasm.WasmModule;
import com.dylibso.chicory.wasm.types.MemoryLimits;
import io.github.plogsequencer.internal.SequencerCore;
import java.io.IOException;
import java.io.InputStream;
import java.util.Objects;

/**
 * The sequencer plugin ({@code sequencer:plugin@0.3.0}), loaded once and shared: it opens
 * {@link Sequencer}s, each in an instance of its own. Thread-safe.
 *
 * <pre>{@code
 * Plugin plugin = Plugin.load();
 * try (Sequencer seq = plugin.open(params, storage)) { ... }
 * }</pre>
 */
public final class Plugin {
    private static final String CORE_RESOURCE = "sequencer-core.wasm";
    private static volatile WasmModule interpreted;

    private final Engine engine;
    private final WasmModule module;

    private Plugin(Engine engine, WasmModule module) {
        this.engine = engine;
        this.module = module;
    }

    /** The plugin compiled to JVM bytecode ({@link Engine#COMPILED}). */
    public static Plugin load() {
        return load(Engine.COMPILED);
    }

    /**
     * The plugin on {@code engine}; {@link PluginLoadException} if the module bundled in this
     * jar is missing or broken.
     */
    public static Plugin load(Engine engine) {
        Objects.requireNonNull(engine, "engine");
        try {
            return new Plugin(engine, engine == Engine.COMPILED ? SequencerCore.load() : interpretedModule());
        } catch (IOException | RuntimeException | ExceptionInInitializerError e) {
            throw new PluginLoadException("cannot load the sequencer plugin (" + engine + "): " + e, e);
        }
    }

    private static WasmModule interpretedModule() throws IOException {
        WasmModule m = interpreted;
        if (m == null) {
            try (InputStream in = Plugin.class.getResourceAsStream(CORE_RESOURCE)) {
                if (in == null) {
                    throw new IOException(CORE_RESOURCE + " is not in this jar");
                }
                m = Parser.parse(in);
            }
            interpreted = m;
        }
        return m;
    }

    /** How this plugin runs. */
    public Engine engine() {
        return engine;
    }

    /**
     * A new sequencer over {@code storage}, in an instance of its own, with the default
     * options. It begins actualizing at once (reading the stored offset, replaying the PLog)
     * on its task thread; {@code start} says "not now" until it is ready. Refused with
     * {@link ErrorCode#INVALID_PARAMS} for params the plugin rejects.
     */
    public Sequencer open(Params params, Storage storage) {
        return open(params, storage, SequencerOptions.defaults());
    }

    /** {@link #open(Params, Storage)} with {@code options}. */
    public Sequencer open(Params params, Storage storage, SequencerOptions options) {
        return new Sequencer(this, Objects.requireNonNull(params, "params"), Objects.requireNonNull(storage, "storage"),
                Objects.requireNonNull(options, "options"));
    }

    /**
     * {@code base} with the facade's system sequences added (docs/DESIGN.md §5.2: workspace kind
     * 0 with the WLog offset from 1 and the record ids), its limits kept: the params of a
     * sequencer for {@link Sequencer#startEvent} and the other facade calls.
     */
    public Params systemParams(Params base) {
        Objects.requireNonNull(base, "base");
        HostLink link = new HostLink(NoStorage.INSTANCE, Clock.system(), 0);
        Guest guest = instantiate(link, 256L << 20);
        try {
            return guest.systemParams(base);
        } catch (RuntimeException e) {
            if (e instanceof IllegalArgumentException) {
                throw (IllegalArgumentException) e;
            }
            throw new TrappedException("the plugin trapped in system-params: " + HostLink.describe(e), e);
        }
    }

    /** A new instance whose imports are {@code link}'s, its memory capped at {@code maxMemoryBytes}. */
    Guest instantiate(HostLink link, long maxMemoryBytes) {
        int maxPages = (int) Math.min(MemoryLimits.MAX_PAGES, maxMemoryBytes / 65536);
        int initial = module.memorySection().map(s -> s.getMemory(0).limits().initialPages()).orElse(1);
        Instance.Builder b = Instance.builder(module)
                .withImportValues(link.imports())
                .withMemoryFactory(ByteArrayMemory::new)
                .withMemoryLimits(new MemoryLimits(Math.min(initial, maxPages), maxPages));
        if (engine == Engine.COMPILED) {
            b.withMachineFactory(SequencerCore::create);
        }
        Instance instance;
        try {
            instance = b.build();
        } catch (RuntimeException e) {
            throw new PluginLoadException("cannot instantiate the sequencer plugin: " + e, e);
        }
        Guest guest = new Guest(instance, link);
        link.attach(guest);
        return guest;
    }

    /** The storage of an instance that never makes a sequencer ({@link #systemParams}). */
    private static final class NoStorage implements Storage {
        static final NoStorage INSTANCE = new NoStorage();

        @Override
        public long[] readNumbers(long ws, int[] seqs) {
            throw new IllegalStateException("no storage");
        }

        @Override
        public long readNextPLogOffset() {
            throw new IllegalStateException("no storage");
        }

        @Override
        public void writeValuesAndNextPLogOffset(java.util.List<SeqValue> batch, long nextPLogOffset) {
            throw new IllegalStateException("no storage");
        }

        @Override
        public void actualizeSequencesFromPLog(long offset, Batcher batcher) {
            throw new IllegalStateException("no storage");
        }
    }
}
