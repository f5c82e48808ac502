// Package plugin holds the sequencer's core module: the plugin built for
// wasm32-unknown-unknown with no WASI imports (docs/PLUGIN.md, "The core module"), embedded so
// that `go get` is all a user of the Go package does. scripts/build-core-module.sh --sync
// rebuilds sequencer-core.wasm from the Rust sources.
package plugin

import _ "embed"

// Wasm is the core module's bytes (sequencer:plugin@0.3.0).
//
//go:embed sequencer-core.wasm
var Wasm []byte

// WITVersion is the version of the WIT package the module's imports and exports lower.
const WITVersion = "0.3.0"
