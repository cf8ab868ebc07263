package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// crashSpec: each run executes one tool at once, then one that waits for
// approval; both leave their call's id in ran.log.
const crashSpec = `version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: check}]
      - toolCalls: [{tool: act}]
      - text: done
tools:
  check: {exec: {command: [appendline, ran.log, "${{ run.id }}/check"]}}
  act:
    exec: {command: [appendline, ran.log, "${{ run.id }}/act"]}
    requireApproval: true
agents:
  a: {model: m, tools: [check, act]}
`

// TestCrash drives agentctl processes through run and approve, SIGKILLs
// them at random moments (seeded: CRASH_SEED), then checks that the
// database is intact, that no tool call's side effect happened twice, and
// that every run can be brought to an end with agentctl commands.
// CRASH_KILLS sets how many processes to kill (default 50; make crash
// runs 1000).
func TestCrash(t *testing.T) {
	t.Parallel() // with the scenarios: each works in a directory of its own
	kills := envInt("CRASH_KILLS", 50)
	seed := envInt("CRASH_SEED", 1)
	if testing.Short() {
		kills = 10
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "agentctl.db")
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(crashSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	agentctl := func(args ...string) *exec.Cmd {
		cmd := exec.Command("agentctl", append([]string{"--db", db}, args...)...)
		cmd.Dir = dir
		return cmd
	}
	// The schema is set up first, as on any machine in use: the kills
	// land in runs and approvals, not in the first migration.
	if out, err := agentctl("migrate").CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	// Kills land anywhere in a process's life: from its start to past
	// its end, as long as an unkilled run and approve take here.
	t0 := time.Now()
	agentctl("run", "a", "-f", "spec.yaml", "--input", "calibrate").Run() // exits 3: suspended
	t1 := time.Now()
	if out, err := agentctl("approve", runsIn(t, agentctl, "suspended")[0]).CombinedOutput(); err != nil {
		t.Fatalf("calibrate: %v\n%s", err, out)
	}
	span := max(t1.Sub(t0), time.Since(t1))
	span = span * 3 / 2
	killed := 0
	for killed < kills {
		var cmd *exec.Cmd
		if suspended := runsIn(t, agentctl, "suspended"); len(suspended) > 0 && rng.IntN(2) == 0 {
			cmd = agentctl("approve", suspended[rng.IntN(len(suspended))])
		} else {
			cmd = agentctl("run", "a", "-f", "spec.yaml", "--input", "go")
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(span)))) // a random moment, not a synchronisation
		if cmd.Process.Kill() == nil {
			killed++
		}
		cmd.Wait()
	}

	// Invariant: the database is intact.
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := raw.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	raw.Close()
	// Invariant: every run and call is in a consistent state (warnings,
	// such as runs a killed process left running, are expected here).
	if out, err := agentctl("doctor").CombinedOutput(); err != nil {
		t.Fatalf("doctor after the kills: %v\n%s", err, out)
	}

	// Every run can be brought to an end.
	for _, id := range runsIn(t, agentctl, "") {
		for step := 0; ; step++ {
			if step > 10 {
				t.Fatalf("run %s does not end", id)
			}
			d := show(t, agentctl, id)
			if d.Status.Terminal() {
				break
			}
			var args []string
			switch {
			case d.Status == store.Running:
				args = []string{"continue", id}
			case len(d.Pending) > 0 && d.Pending[0].Kind == store.KindInterrupted:
				args = []string{"resolve", id, "--call", d.Pending[0].CallID, "--output", "resolved after a crash"}
			default:
				args = []string{"approve", id}
			}
			if out, err := agentctl(args...).CombinedOutput(); err != nil {
				if code := err.(*exec.ExitError).ExitCode(); code != 3 {
					dump, _ := agentctl("show", id).Output()
					t.Fatalf("%s: exit %d: %s\n%s", strings.Join(args, " "), code, out, dump)
				}
			}
		}
	}

	// With every run ended, nothing is left for a human.
	if out, err := agentctl("doctor").CombinedOutput(); err != nil || bytes.Contains(out, []byte("\nwarn")) {
		t.Fatalf("doctor after ending every run: %v\n%s", err, out)
	}

	// No call's side effect happened twice, and none of a run that was
	// not stored: a run commits before its first tool starts.
	log, _ := os.ReadFile(filepath.Join(dir, "ran.log"))
	seen := map[string]bool{}
	stored := map[string]bool{}
	for _, id := range runsIn(t, agentctl, "") {
		stored[id] = true
	}
	for _, l := range strings.Fields(string(log)) {
		if seen[l] {
			t.Errorf("%s ran twice", l)
		}
		seen[l] = true
		if id, _, _ := strings.Cut(l, "/"); !stored[id] {
			t.Errorf("%s ran, and its run is not in the database", l)
		}
	}
	if len(seen) < kills/10 {
		t.Errorf("%d side effects in %d kills: the kills land too early to test anything (span %v)", len(seen), kills, span)
	}
	t.Logf("%d processes killed (seed %d), %d runs ended, %d side effects", killed, seed, len(runsIn(t, agentctl, "")), len(seen))
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// runsIn lists run ids with a status ("" for all).
func runsIn(t *testing.T, agentctl func(...string) *exec.Cmd, status string) []string {
	args := []string{"list", "--limit", "0", "-o", "json"}
	if status != "" {
		args = append(args, "--status", status)
	}
	out, err := agentctl(args...).Output()
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var runs []engine.RunView
	if err := json.Unmarshal(out, &runs); err != nil {
		t.Fatalf("list: %v: %s", err, out)
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.RunID
	}
	return ids
}

func show(t *testing.T, agentctl func(...string) *exec.Cmd, id string) *engine.RunDetail {
	out, err := agentctl("show", id, "-o", "json").Output()
	if err != nil {
		t.Fatalf("show %s: %v", id, err)
	}
	var d engine.RunDetail
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}
