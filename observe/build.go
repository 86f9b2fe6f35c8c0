package observe

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version overrides the version the build info gives, when set at build
// time with -ldflags "-X github.com/dubbogw/dubbogw/observe.Version=v1.2.3"
// (a build from a source archive, without module or VCS information).
// Empty by default; read through Build, never written by the program.
var Version = ""

// BuildInfo says which gateway this is: what `dubbogw version` prints,
// dubbogw_build_info's labels and /admin/summary's build.
type BuildInfo struct {
	// Version is the module version (v1.2.3 when built by
	// `go install github.com/dubbogw/dubbogw/cmd/dubbogw@v1.2.3`), the
	// -ldflags Version, or "(devel)" for a build from a checkout.
	Version string `json:"version"`
	// Revision and Time are the VCS commit and its time, when built
	// from a checkout (go build stamps them); Modified says the tree had
	// uncommitted changes.
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

// Build reads the build information the Go toolchain stamped into the
// binary.
func Build() BuildInfo {
	b := BuildInfo{Version: "(devel)", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		b.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" {
			b.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		b.Version = Version
	}
	return b
}

// String is the version line and what is known of the build, one per
// line, as `dubbogw version` prints them.
func (b BuildInfo) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "dubbogw %s\n", b.Version)
	if b.Revision != "" {
		fmt.Fprintf(&s, "  revision  %s", b.Revision)
		if b.Modified {
			s.WriteString(" (modified)")
		}
		s.WriteByte('\n')
	}
	if b.Time != "" {
		fmt.Fprintf(&s, "  time      %s\n", b.Time)
	}
	fmt.Fprintf(&s, "  go        %s %s/%s\n", b.GoVersion, runtime.GOOS, runtime.GOARCH)
	return s.String()
}
