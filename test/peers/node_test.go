package peers_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dubbogw/dubbogw/test/peers"
)

// TestHessianJS proves the codec against hessian.js, the npm package pinned
// in node/package-lock.json (scripts/test.sh runs npm ci).
func TestHessianJS(t *testing.T) {
	node, err := exec.LookPath("node")
	requireRuntime(t, "node", err)
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	requireRuntime(t, "hessian.js in test/peers/node/node_modules", fileExists(filepath.Join(dir, "node_modules", "hessian.js", "package.json")))

	runPeer(t, process{
		Peer: peers.Peer{Name: peers.HessianJS, Wire: hessianJSWire, Sees: hessianJSSees},
		command: func(ctx context.Context) *exec.Cmd {
			cmd := exec.CommandContext(ctx, node, "peer.js")
			cmd.Dir = dir
			return cmd
		},
	})
}

// hessianJSWire: hessian.js writes java.util.HashMap and java.util.Map
// untyped (H), and java.util.ArrayList untyped, as Java does.
func hessianJSWire(d *peers.Desc) *peers.Desc {
	return peers.Rewrite(d, func(n *peers.Desc) *peers.Desc {
		if n.T == "map" && (n.Type == "java.util.HashMap" || n.Type == "java.util.Map") ||
			n.T == "list" && n.Type == "java.util.ArrayList" {
			n.Type = ""
		}
		return n
	})
}

// hessianJSSees is how hessian.js's value model shows a value.
func hessianJSSees(d *peers.Desc) *peers.Desc {
	return peers.Rewrite(d, func(n *peers.Desc) *peers.Desc {
		switch {
		case n.T == "map" && n.Type == "":
			// Every untyped map comes back as {$class: 'java.util.HashMap'}.
			n.Type = "java.util.HashMap"
		case n.T == "bigdecimal":
			// No BigDecimal type: hessian.js shows the object hessian-lite
			// writes, one String field "value".
			return peers.Object("java.math.BigDecimal", "value", peers.String(n.Str)).As(n.ID)
		case n.T == "enum":
			// No enums: hessian.js shows the object Java writes, one field
			// "name".
			return peers.Object(n.Type, "name", peers.String(n.Str)).As(n.ID)
		}
		return n
	})
}
