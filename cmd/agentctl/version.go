package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

const versionHelp = `Print agentctl's version: the module version, the VCS revision and
time it was built from (and whether the tree had changes; "unknown" when
the build did not record it), and the Go
toolchain and platform, all from the binary's build information.
agentctl --version prints the first line.

Examples:
  agentctl version
  agentctl version -o json
  agentctl --version`

// buildVersion is what the binary says of its build.
type buildVersion struct {
	Version  string `json:"version"`            // the module version, (devel) for a local build
	Revision string `json:"revision,omitempty"` // the VCS revision
	Time     string `json:"time,omitempty"`     // the revision's commit time
	Modified bool   `json:"modified"`           // the tree had uncommitted changes
	Go       string `json:"go"`                 // the Go toolchain
	Platform string `json:"platform"`           // GOOS/GOARCH
}

// versionOf reads the binary's build information.
func versionOf() buildVersion {
	v := buildVersion{Version: moduleVersion(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Revision == "" {
		// go install of a module version records no VCS settings; a
		// pseudo-version still names its commit.
		v.Revision, v.Time = pseudoRevision(v.Version)
	}
	return v
}

// pseudoRevision reads the commit a Go pseudo-version names
// (v0.0.0-20261201093000-0123456789ab): its 12-digit revision prefix and
// its UTC time; "" for any other version.
func pseudoRevision(version string) (rev, at string) {
	parts := strings.Split(strings.TrimSuffix(version, "+incompatible"), "-")
	if len(parts) < 3 {
		return "", ""
	}
	rev, stamp := parts[len(parts)-1], parts[len(parts)-2]
	if i := strings.LastIndexByte(stamp, '.'); i >= 0 { // v1.2.4-0.20261201093000-...
		stamp = stamp[i+1:]
	}
	t, err := time.Parse("20060102150405", stamp)
	if len(rev) != 12 || strings.Trim(rev, "0123456789abcdef") != "" || err != nil {
		return "", ""
	}
	return rev, t.UTC().Format(time.RFC3339)
}

// line is the version's first line, as --version prints it.
func (v buildVersion) line() string { return "agentctl " + v.Version }

func (v buildVersion) write(w io.Writer) {
	fmt.Fprintln(w, v.line())
	if v.Revision != "" {
		mod := ""
		if v.Modified {
			mod = ", with uncommitted changes"
		}
		fmt.Fprintf(w, "revision %s (%s%s)\n", v.Revision, v.Time, mod)
	} else {
		fmt.Fprintln(w, "revision unknown (built without VCS information, as go build -buildvcs=false or outside a checkout; make build records it)")
	}
	fmt.Fprintf(w, "built with %s for %s\n", v.Go, v.Platform)
}

func (a *app) versionCmd() *cobra.Command {
	var out format
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print agentctl's version, revision and Go toolchain",
		Long:  versionHelp,
		Args:  argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionOf()
			if out == "json" {
				return writeJSON(a.stdout, v)
			}
			v.write(a.stdout)
			return nil
		},
	}
	addFormatFlag(cmd, &out)
	return cmd
}
