#!/usr/bin/env bash
# The Java package (java/): `mvn -q verify` (the unit tests, the 26 conformance scenarios on the
# build-time compiled and the interpreted engine, the kill-and-restart test with a child JVM),
# then the example program, whose output it checks.
#
# Installs what it needs, saying so first:
#   - a JDK 17 and Maven from Debian's packages, only when `javac` or `mvn` is missing;
#   - Maven's dependencies and plugins (Chicory, JUnit, Jackson, ...) into Maven's own
#     repository (~/.m2/repository, outside the clone; MAVEN_REPO=DIR for another) on the first run. Once a run has passed
#     with this pom.xml, later runs go offline (-o): nothing is looked up.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../java"

if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
  echo "test-java: installing openjdk-17-jdk-headless and maven (Debian)" >&2
  apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
fi

repo="${MAVEN_REPO:-$HOME/.m2/repository}"
repo_opt=()
[[ -n "${MAVEN_REPO:-}" ]] && repo_opt=(-Dmaven.repo.local="$MAVEN_REPO")
warm="$repo/.plog-sequencer-warm-$(sha256sum pom.xml | cut -c1-16)"
offline=()
if [[ -f "$warm" ]]; then
  offline=(-o)
else
  echo "test-java: first run with this pom.xml: Maven resolves its dependencies and plugins into $repo" >&2
fi

start=$(date +%s)
mvn -q -B -Dstyle.color=never "${repo_opt[@]}" "${offline[@]}" verify
touch "$warm"

out="$(java -cp "target/plog-sequencer-0.1.0.jar:$(cat target/classpath.txt)" examples/NumberOneEvent.java)"
if [[ "$out" != "43 14 14 43" ]]; then
  echo "test-java: the example printed '$out', not '43 14 14 43'" >&2
  exit 1
fi
# README.md's "Embedding from Java" shows the example's body as it is.
python3 - examples/NumberOneEvent.java ../README.md <<'PY'
import sys, textwrap
src, readme = open(sys.argv[1]).read(), open(sys.argv[2]).read()
end = src.index("\n", src.index("        System.out.println"))
body = textwrap.dedent(src[src.index("        MemoryStorage storage"):end])
sys.exit(0 if body in readme else "README.md does not show java/examples/NumberOneEvent.java's body as it is: copy it into 'Embedding from Java'")
PY
passed=0
failed=0
for f in target/surefire-reports/*.txt; do
  read -r run fail err skip < <(sed -n 's/^Tests run: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\), Skipped: \([0-9]*\).*/\1 \2 \3 \4/p' "$f")
  passed=$((passed + run - fail - err - skip))
  failed=$((failed + fail + err))
done
echo "test-java: the example printed: $out"
echo "test-java: $(( $(date +%s) - start )) s"
echo "java: $passed passed, $failed failed"
