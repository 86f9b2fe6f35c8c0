package peers_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dubbogw/dubbogw/test/peers"
)

// cauchoJar is where Debian's libhessian-java (4.0.38) puts Caucho Hessian.
const cauchoJar = "/usr/share/java/hessian.jar"

// TestCaucho proves the codec against Caucho Hessian's Hessian2Output and
// Hessian2Input, with the Java classes of java/ compiled for the run.
func TestCaucho(t *testing.T) {
	java, err := exec.LookPath("java")
	requireRuntime(t, "java", err)
	javac, err := exec.LookPath("javac")
	requireRuntime(t, "javac", err)
	requireRuntime(t, "Caucho Hessian (libhessian-java)", fileExists(cauchoJar))

	sources, err := filepath.Glob(filepath.Join("java", "*.java"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no Java sources in java/: %v", err)
	}
	classes := t.TempDir()
	compile := exec.CommandContext(t.Context(), javac, append([]string{"-nowarn", "-encoding", "UTF-8", "-cp", cauchoJar, "-d", classes}, sources...)...)
	if out, err := compile.CombinedOutput(); err != nil {
		t.Fatalf("compiling the Java peer: %v\n%s", err, out)
	}

	runPeer(t, process{
		Peer: peers.Peer{Name: peers.Caucho, Wire: cauchoWire, Sees: cauchoSees},
		command: func(ctx context.Context) *exec.Cmd {
			return exec.CommandContext(ctx, java,
				// Caucho reads and writes private fields of java.lang
				// (Throwable), java.util and java.math classes.
				"--add-opens", "java.base/java.lang=ALL-UNNAMED",
				"--add-opens", "java.base/java.util=ALL-UNNAMED",
				"--add-opens", "java.base/java.math=ALL-UNNAMED",
				"-XX:TieredStopAtLevel=1",
				"-cp", classes+string(filepath.ListSeparator)+cauchoJar, "interop.Peer")
		},
	})
}

// cauchoWire: Caucho writes a HashMap untyped (H) and an ArrayList untyped.
func cauchoWire(d *peers.Desc) *peers.Desc {
	return peers.Rewrite(d, func(n *peers.Desc) *peers.Desc {
		if n.T == "map" && n.Type == "java.util.HashMap" || n.T == "list" && n.Type == "java.util.ArrayList" {
			n.Type = ""
		}
		return n
	})
}

// cauchoSees is how the Java objects Caucho builds show a value.
func cauchoSees(d *peers.Desc) *peers.Desc {
	d = peers.Rewrite(d, func(n *peers.Desc) *peers.Desc {
		// An untyped list is read into an ArrayList, an untyped map into a
		// HashMap.
		if n.T == "list" && n.Type == "" {
			n.Type = "java.util.ArrayList"
		}
		if n.T == "map" && n.Type == "" {
			n.Type = "java.util.HashMap"
		}
		return n
	})
	// A HashMap keeps its entries in hash order.
	d = peers.SortEntries(d, "java.util.HashMap")
	// An enum constant is a singleton: a reference to it and a second copy
	// of it read the same.
	return peers.InlineRefs(d, func(n *peers.Desc) bool { return n.T == "enum" })
}
