"""The wheel's build hook: a wheel without the component would install and then fail at the
first `Plugin()`, so the build stops here instead, in one line saying what to run."""

from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    """Refuses to build when the component, its WIT or the LICENSE has not been copied in."""

    def initialize(self, version, build_data):
        package = Path(self.root) / "src" / "plog_sequencer"
        for needed in (package / "sequencer.wasm", package / "wit" / "sequencer.wit", Path(self.root) / "LICENSE"):
            if not needed.is_file():
                raise RuntimeError(
                    f"{needed} is missing: build the wheel with `bash scripts/build-plugin.sh`, "
                    "which builds the component and copies it, its WIT and the LICENSE in first")
