package io.github.plogsequencer;

/** Checks that Java values fit the WIT's unsigned types before they cross into the plugin. */
final class Args {
    private Args() {}

    static int u16(String what, int value) {
        if (value < 0 || value > 0xFFFF) {
            throw new IllegalArgumentException(what + " must be a u16 (0..65535), got " + value);
        }
        return value;
    }

    static int u8(String what, int value) {
        if (value < 0 || value > 0xFF) {
            throw new IllegalArgumentException(what + " must be a u8 (0..255), got " + value);
        }
        return value;
    }

    static int u32(String what, long value) {
        if (value < 0 || value > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException(what + " must be a u32, got " + value);
        }
        return (int) value;
    }

    static long nonNegative(String what, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(what + " must not be negative, got " + value);
        }
        return value;
    }
}
