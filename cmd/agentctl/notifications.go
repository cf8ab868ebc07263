package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/outbox"
)

const notificationsHelp = `Notifications lists the notifications of the database, newest first:
each one is a notification of one event (a call waiting for approval or
resume data, a call that expired, a run that completed or failed) to one
target (a webhook, Slack, a command) of a notify: section, in a spec's
agent or in agentctl serve's configuration. It shows whether each was
delivered, how many attempts it took, when the next one is due and why
the last one failed. It only reads.

Notifications are queued from the event log, written in the same
transaction as what they report, and delivered at least once, each with
a stable id (the webhook-id): agentctl serve and agentctl worker deliver
as they run; without either, the command that made the transition tries
once before it exits, and agentctl notifications deliver (for cron) sends
what is due. A failed attempt is retried with exponential backoff and
jitter (attempts and backoff in the target); one the target refuses for
good (HTTP 410, another 4xx) or out of attempts is failed, and
agentctl notifications redeliver ID sends it again. docs/notifications.md.`

type notificationView struct {
	ID          string          `json:"id"`
	Source      string          `json:"source"`
	Type        string          `json:"type"`
	RunID       string          `json:"runId"`
	CallID      string          `json:"callId,omitempty"`
	Target      string          `json:"target"`
	Status      string          `json:"status"`
	Attempts    int             `json:"attempts"`
	NextAt      *time.Time      `json:"nextAt,omitempty"`
	LastError   string          `json:"lastError,omitempty"`
	CreatedAt   time.Time       `json:"createdAt"`
	DeliveredAt *time.Time      `json:"deliveredAt,omitempty"`
	Body        json.RawMessage `json:"body"`
}

func viewNotification(n *store.Notification) notificationView {
	v := notificationView{ID: n.ID, Source: n.Source, Type: n.Type, RunID: n.RunID, CallID: n.CallID, Status: string(n.Status),
		Attempts: n.Attempts, LastError: n.LastError, CreatedAt: n.CreatedAt}
	var t notify.Target
	if json.Unmarshal(n.Target, &t) == nil {
		v.Target = t.Name()
	}
	if n.Status == store.NotifyPending {
		at := n.NextAt
		v.NextAt = &at
	}
	if !n.DeliveredAt.IsZero() {
		at := n.DeliveredAt
		v.DeliveredAt = &at
	}
	if b, err := outbox.Body(n); err == nil {
		v.Body = b
	} else {
		v.Body = json.RawMessage(`null`)
	}
	return v
}

func (a *app) notificationsCmd() *cobra.Command {
	var out format
	var failed bool
	var run string
	var limit int
	cmd := &cobra.Command{
		Use:   "notifications [--failed] [--run ID] | deliver | redeliver ID",
		Short: "List notifications and whether they were delivered; deliver or redeliver them",
		Long:  notificationsHelp,
		Example: `  agentctl notifications
  agentctl notifications --failed -o json | jq -r '.[].lastError'
  agentctl notifications deliver        # from cron, where no worker or server runs
  agentctl notifications redeliver ntf_3f9a2c`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.dbOpts.ReadOnly = true // reads only read: see docs/architecture.md
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			if limit < 1 || limit > 10000 {
				return usageErr(fmt.Errorf("--limit %d: want 1 to 10000", limit))
			}
			f := store.NotificationFilter{Limit: limit}
			if failed {
				f.Status = store.NotifyFailed
			}
			if run != "" {
				if f.RunID, err = db.ResolveID(cmd.Context(), run); err != nil {
					return err
				}
			}
			ns, err := db.Notifications(cmd.Context(), f)
			if err != nil {
				return err
			}
			views := make([]notificationView, 0, len(ns))
			for _, n := range ns {
				views = append(views, viewNotification(n))
			}
			if out == "json" {
				return writeJSON(a.stdout, views)
			}
			return a.printNotifications(views, failed)
		},
	}
	cmd.Flags().BoolVar(&failed, "failed", false, "only those that failed: refused for good, or out of attempts")
	cmd.Flags().StringVar(&run, "run", "", "only those of run `ID` (a root's: its whole tree's)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most `N`")
	addFormatFlag(cmd, &out)
	cmd.AddCommand(a.notificationsDeliverCmd(), a.notificationsRedeliverCmd())
	return cmd
}

func (a *app) printNotifications(views []notificationView, failed bool) error {
	if len(views) == 0 {
		if failed {
			fmt.Fprintln(a.stdout, "no failed notifications")
		} else {
			fmt.Fprintln(a.stdout, "no notifications (a notify: section in a spec's agent or agentctl serve's configuration makes them)")
		}
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tRUN\tCALL\tTARGET\tSTATUS\tATTEMPTS\tWHEN\tLAST ERROR")
	for _, v := range views {
		when, call, last := stamp(v.CreatedAt), v.CallID, v.LastError
		switch {
		case v.DeliveredAt != nil:
			when = stamp(*v.DeliveredAt)
		case v.NextAt != nil:
			when = "next " + stamp(*v.NextAt)
		}
		if call == "" {
			call = "-"
		}
		if last == "" {
			last = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", v.ID, v.Type, v.RunID, call, escaped(v.Target, false), v.Status,
			v.Attempts, when, oneLine(escaped(last, false), 120))
	}
	return tw.Flush()
}

func (a *app) notificationsDeliverCmd() *cobra.Command {
	var out format
	cmd := &cobra.Command{
		Use:   "deliver",
		Short: "Queue and send the notifications due now (for cron)",
		Long: `Deliver queues the notifications of the events committed since the last
deliverer looked, and sends those due now once each: the notify: targets
of the runs' agents (agentctl serve delivers its configuration's own).
Secrets are read from this process's environment. It exits 0 when every
attempt was delivered, 1 when one was not (it is retried later, or
failed: agentctl notifications --failed).`,
		Example: `  */5 * * * * WEBHOOK_SECRET=... agentctl notifications deliver`,
		Args:    argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.existingDB(); err != nil {
				return err
			}
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			e := engine.New(db, engine.Config{})
			b := specOutbox(outboxOptions(db, e, slog.New(slog.DiscardHandler)), e)
			queued, err := b.Queue(cmd.Context())
			if err != nil {
				return err
			}
			res, err := b.Deliver(cmd.Context(), nil)
			if err != nil {
				return err
			}
			return a.delivered(out, len(queued), res)
		},
	}
	addFormatFlag(cmd, &out)
	return cmd
}

// delivered reports what a delivery did; one not delivered exits 1.
func (a *app) delivered(out format, queued int, res outbox.Result) error {
	if out == "json" {
		if err := writeJSON(a.stdout, map[string]int{"queued": queued, "delivered": res.Delivered, "retrying": res.Retrying, "failed": res.Failed}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "queued %d, delivered %d, to retry %d, failed %d\n", queued, res.Delivered, res.Retrying, res.Failed)
	}
	if res.Retrying+res.Failed > 0 {
		return &exitErr{code: exitError}
	}
	return nil
}

func (a *app) notificationsRedeliverCmd() *cobra.Command {
	var out format
	cmd := &cobra.Command{
		Use:   "redeliver ID",
		Short: "Send a notification again, delivered or failed, with its attempts reset",
		Long: `Redeliver makes the notification whose id starts with ID pending again,
due now, with no attempts, and (one of a spec's notify: targets) tries
it once from this process; agentctl serve sends its configuration's.
Its id, the webhook-id, stays the same: a receiver that has it already
may drop it. An unknown id exits 2.`,
		Example: `  agentctl notifications redeliver ntf_3f9a2c`,
		Args:    argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.existingDB(); err != nil {
				return err
			}
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			n, err := db.Redeliver(cmd.Context(), args[0], time.Now())
			if err != nil {
				return err
			}
			res := outbox.Result{}
			if n.Source != store.SourceSpec {
				fmt.Fprintf(a.stdout, "notification %s is pending again: agentctl serve sends its configuration's own\n", n.ID)
				return nil
			}
			{
				e := engine.New(db, engine.Config{})
				b := specOutbox(outboxOptions(db, e, slog.New(slog.DiscardHandler)), e)
				if res, err = b.Deliver(cmd.Context(), []string{n.ID}); err != nil {
					return err
				}
			}
			return a.delivered(out, 0, res)
		},
	}
	addFormatFlag(cmd, &out)
	return cmd
}
