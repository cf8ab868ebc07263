package server

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/internal/names"
	"github.com/agentctl/agentctl/spec"
)

// Specs are the agents the server runs: the configuration's spec files
// and directories, compiled. Reload replaces them only when the new ones
// load and compile; otherwise the old ones stay.
type Specs struct {
	paths   []string
	maxFile int64
	compile func(*spec.Spec) (*engine.Graph, error)

	mu    sync.RWMutex
	graph *engine.Graph
	known *names.Known // the users and groups the specs name
}

// NewSpecs returns the specs of paths, not loaded yet; compile is the
// engine's.
func NewSpecs(paths []string, maxFile int64, compile func(*spec.Spec) (*engine.Graph, error)) *Specs {
	return &Specs{paths: paths, maxFile: maxFile, compile: compile}
}

// Load loads and compiles the specs. On failure the specs loaded before,
// if any, stay in use; every problem is logged with its file:line:col
// and returned.
func (s *Specs) Load(log *slog.Logger) error {
	if len(s.paths) == 0 {
		return nil // no specs: runs start from uploaded specs only
	}
	g, known, err := s.load()
	if err != nil {
		var se spec.Errors
		if errors.As(err, &se) {
			for _, e := range se {
				log.Error("spec", "error", e.Error())
			}
		} else {
			log.Error("spec", "error", err.Error())
		}
		if s.Graph() != nil {
			log.Warn("specs not reloaded: the ones loaded before stay in use")
		}
		return err
	}
	s.mu.Lock()
	s.graph, s.known = g, known
	s.mu.Unlock()
	log.Info("specs loaded", "agents", g.Agents())
	return nil
}

func (s *Specs) load() (*engine.Graph, *names.Known, error) {
	sp, err := spec.Files{MaxFile: s.maxFile}.Load(s.paths...)
	if err != nil {
		return nil, nil, err
	}
	g, err := s.compile(sp)
	if err != nil {
		return nil, nil, fmt.Errorf("compile the specs: %w", err)
	}
	known := &names.Known{}
	for _, n := range sp.Names() {
		_ = known.Add(n, "named by the specs") // ASCII names: none looks like another
	}
	return g, known, nil
}

// LookAlike returns a *names.LookAlikeError when a user or group the
// specs name looks like name (names.Known.LookAlike); else nil.
func (s *Specs) LookAlike(name string) error {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.known.LookAlike(name)
}

// Graph returns the compiled specs, or nil when none are loaded.
func (s *Specs) Graph() *engine.Graph {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.graph
}

// Ready reports whether the specs are loaded (or none are configured).
func (s *Specs) Ready() bool { return s == nil || len(s.paths) == 0 || s.Graph() != nil }
