package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/internal/scenario"
)

// adminConfig is the administrator's file: delegates named there may
// decide on behalf of others (--as) for every spec. agentctl serve reads
// it too.
const adminConfig = "/etc/agentctl/config.yaml"

// scenarioMarker, in the directory of a database, marks it as a scenario's
// throwaway database (agentctl test): the user who owns the directory and
// the marker acts as a delegate there.
const scenarioMarker = scenario.Marker

// errDelegatesEnv refuses the variable that used to name delegates: any
// user could set it, and then decide as anyone.
var errDelegatesEnv = errors.New("AGENTCTL_DELEGATES is no longer read: any user could set it; name delegates in the spec's policy.delegates, or in " +
	adminConfig + " (owned by root, writable by no one else)")

// delegates returns the OS users who may decide on behalf of others for
// every spec: those of the administrator's file, when it is root's and
// writable by no one else, and, for a scenario's database, the user
// running the scenario.
//
// A file that is not honoured, or cannot be read, names no delegates: it
// is said on warn, and the command goes on without them.
func delegates(dbPath string, warn io.Writer) ([]string, error) {
	if os.Getenv("AGENTCTL_DELEGATES") != "" {
		return nil, inputErr(errDelegatesEnv)
	}
	out, err := readAdminDelegates(adminConfig)
	if err != nil {
		fmt.Fprintf(warn, "note: %v; its delegates are ignored\n", err)
	}
	if ownedMarker(dbPath) {
		out = append(out, osUser())
	}
	return out, nil
}

// adminFile is the part of the administrator's file agentctl reads.
type adminFile struct {
	Delegates []string `yaml:"delegates"`
}

// readAdminDelegates reads the delegates of the administrator's file at
// path: none when there is no file; an error when it is not root's, or
// others may write it.
func readAdminDelegates(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	uid, ok := fileOwner(fi)
	if !ok || uid != 0 || fi.Mode().Perm()&0o022 != 0 || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not honoured: it must be a file owned by root that no one else may write (it is %s, owner uid %d)",
			path, fi.Mode(), uid)
	}
	// Nor may anyone else replace it: each directory above is root's, and
	// only root may write it (or it is sticky, as /tmp).
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		di, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		duid, ok := fileOwner(di)
		if !ok || duid != 0 || di.Mode().Perm()&0o022 != 0 && di.Mode()&fs.ModeSticky == 0 {
			return nil, fmt.Errorf("%s is not honoured: others may replace it: its directory %s must be root's and writable by root only (it is %s, owner uid %d)",
				path, dir, di.Mode(), duid)
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var f adminFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Delegates, nil
}

// ownedMarker reports whether a SQLite database is a scenario's: the
// database file (if it exists yet), its real directory and the marker
// there are all the running user's. A link to someone else's database,
// placed in a directory of one's own, gets no grant: the link is
// resolved, and the file's owner is the other's.
func ownedMarker(dbPath string) bool {
	if real, err := filepath.EvalSymlinks(dbPath); err == nil {
		dbPath = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(dbPath))
	if err != nil {
		return false
	}
	for _, p := range []string{dbPath, dir, filepath.Join(dir, scenarioMarker)} {
		fi, err := os.Lstat(p)
		if p == dbPath && errors.Is(err, fs.ErrNotExist) {
			continue // the scenario's run creates it
		}
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return false
		}
		if uid, ok := fileOwner(fi); !ok || uid != os.Getuid() {
			return false
		}
	}
	return true
}
