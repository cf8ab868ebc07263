package api

import (
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// AuditEntry is one decision as agentctl audit -o json prints it and
// GET /v1/audit lists it: -o csv has the same fields, in this order, and
// -o text the same values.
type AuditEntry struct {
	At      time.Time    `json:"at"`
	RunID   string       `json:"runId"`
	RootID  string       `json:"rootId"`
	Agent   string       `json:"agent"`
	CallID  string       `json:"callId"`
	Tool    string       `json:"tool"`
	Action  store.Action `json:"action"`
	By      string       `json:"by"`
	OSUser  string       `json:"osUser"`
	Via     string       `json:"via"` // "cli" for a decision made on the database
	Reason  string       `json:"reason"`
	Edited  bool         `json:"edited"` // an approval changed the arguments
	Resumed bool         `json:"resumed"`
	Path    []string     `json:"path"` // the agents from the root's to the run's
}

// AuditEntries are decisions as audit prints them.
func AuditEntries(ds []*store.Audited) []AuditEntry {
	entries := make([]AuditEntry, 0, len(ds))
	for _, d := range ds {
		via := d.Via
		if via == "" {
			via = "cli"
		}
		path := d.Path
		if len(path) == 0 {
			path = []string{d.Agent}
		}
		entries = append(entries, AuditEntry{At: d.At.UTC(), RunID: d.RunID, RootID: d.RootID, Agent: d.Agent, CallID: d.CallID, Tool: d.Tool,
			Action: d.Action, By: d.By, OSUser: d.OSUser, Via: via, Reason: d.Reason, Edited: len(d.ArgsAfter) > 0, Resumed: len(d.Data) > 0,
			Path: path})
	}
	return entries
}

// Status is what agentctl status -o json prints and GET /v1/status
// answers: the workers, the leases, the queue and the calls waiting for
// a human.
type Status struct {
	// Database is the database in use: locally, its path or URL with
	// the password masked; through a server, its kind only (sqlite or
	// postgres).
	Database string `json:"database"`
	// Server is the server the status came through; absent locally.
	Server        string         `json:"server,omitempty"`
	Workers       []StatusWorker `json:"workers"`
	Leases        int            `json:"leases"`
	Queued        int            `json:"queued"`
	Pending       int            `json:"pending"`
	Overdue       int            `json:"overdue"` // of the pending calls, those past their deadline
	OldestPending *time.Time     `json:"oldestPending,omitempty"`
	// OldestPendingAge is how long the oldest has waited, in seconds.
	OldestPendingAge *float64 `json:"oldestPendingAgeSeconds,omitempty"`
}

// StatusWorker is a worker as status lists it.
type StatusWorker struct {
	store.Worker
	Alive bool `json:"alive"`
	// Dead: its process is provably gone (engine.HolderDead), on the
	// host that answers; it is not alive either.
	Dead bool `json:"dead"`
}
