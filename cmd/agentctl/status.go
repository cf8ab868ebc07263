package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/toolkits"
)

const statusHelp = `Show the workers alive, the runs live processes hold (leases), the
queue (runs waiting for a worker), and the calls waiting for a human with
the oldest of them.

A worker is alive if it beat within its lease (it beats three times a
lease). One that stopped beating without unregistering (killed, its
machine lost) is listed as gone for three of its leases, then no longer;
the next heartbeat of any worker deletes it. A worker of this host whose
process is provably gone (killed with SIGKILL) is listed as dead at once:
other workers take its runs over without waiting for its leases. A
worker alive whose wait for work fails (its LISTEN connection to
PostgreSQL) is degraded: it looks for work every second meanwhile.

Through a server, the database line names its kind (sqlite or
postgres) and the server, never its path or URL; a worker is dead when
its process is provably gone on the server's host.

Examples:
  agentctl status
  agentctl status --db postgres://agentctl@db/agentctl -o json`

func (a *app) statusCmd() *cobra.Command {
	var out format
	cmd := remoteOK(&cobra.Command{
		Use:   "status",
		Short: "Show workers, leases, the queue and the oldest pending approval",
		Long:  statusHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdUsageErr(cmd, fmt.Errorf("status describes the whole database and takes no run id: agentctl show %s describes one run", toolkits.ShellQuote(args[0])))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.remote != nil {
				v, err := a.remote.Status(cmd.Context())
				if err != nil {
					return a.remoteErr(err, out)
				}
				v.Server = a.remote.Server()
				return a.printStatus(out, v, time.Now())
			}
			a.dbOpts.ReadOnly = true // reads only read: see docs/architecture.md
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			q, err := db.Queue(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			path, _ := dbPath(a.dbPath) // as given: an empty database reads as one in memory
			v := server.StatusOf(backend.Redact(path), q, now)
			return a.printStatus(out, &v, now)
		},
	})
	addFormatFlag(cmd, &out)
	return cmd
}

// printStatus prints a status as -o out says; through a server, the
// database line names its kind and the server.
func (a *app) printStatus(out format, v *api.Status, now time.Time) error {
	if out == "json" {
		return writeJSON(a.stdout, v)
	}
	if v.Server != "" {
		fmt.Fprintf(a.stdout, "database %s, through the server %s\n", v.Database, v.Server)
	} else {
		fmt.Fprintf(a.stdout, "database %s\n", v.Database)
	}
	alive := 0
	for _, w := range v.Workers {
		if w.Alive {
			alive++
		}
	}
	fmt.Fprintf(a.stdout, "workers  %d alive\n", alive)
	for _, w := range v.Workers {
		a.printWorker(w)
	}
	fmt.Fprintf(a.stdout, "leases   %d %s held\n", v.Leases, plural(v.Leases, "run", "runs"))
	fmt.Fprintf(a.stdout, "queue    %d %s waiting for a worker\n", v.Queued, plural(v.Queued, "run", "runs"))
	if v.OldestPending != nil {
		fmt.Fprintf(a.stdout, "pending  %d %s waiting for a human%s, the oldest since %s (%s)\n",
			v.Pending, plural(v.Pending, "call", "calls"), a.overdue(v.Overdue), stamp(*v.OldestPending), now.Sub(*v.OldestPending).Round(time.Second))
	} else {
		fmt.Fprintln(a.stdout, "pending  no call waits for a human")
	}
	return nil
}

// printWorker prints a worker's line of status.
func (a *app) printWorker(w api.StatusWorker) {
	state := "alive"
	switch {
	case w.Alive && w.Problems != "":
		state = "alive, degraded: " + oneLine(w.Problems, 300)
	case w.Dead:
		state = "dead (its process is gone)"
	case !w.Alive:
		state = "gone (no heartbeat since " + stamp(w.Seen) + ")"
	}
	agent := w.Agent
	if agent == "" {
		agent = "all agents"
	}
	fmt.Fprintf(a.stdout, "  %s  %s pid %d  %s  concurrency %d  %d %s  since %s  %s\n",
		w.ID, w.Host, w.PID, agent, w.Concurrency, w.Done, plural(w.Done, "run", "runs"), stamp(w.Started), state)
}

// overdue says how many pending calls are past their deadline, and what
// declines them; "" when none is.
func (a *app) overdue(n int) string {
	if n == 0 {
		return ""
	}
	if a.remote != nil { // expire does not go through a server
		return fmt.Sprintf(" (%d overdue: the server's workers decline %s)", n, plural(n, "it", "them"))
	}
	return fmt.Sprintf(" (%d overdue: %s expire declines %s)", n, a.hintCmd(), plural(n, "it", "them"))
}
