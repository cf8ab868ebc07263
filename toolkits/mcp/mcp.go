// Package mcp imports the tools of an MCP server (stdio or streamable
// HTTP) through github.com/mark3labs/mcp-go. A server is started on first
// use, once per process, and stopped by Close.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
)

// Tool is one tool a server lists.
type Tool struct {
	Name        string // as the server names it
	Description string
	Input       *spec.Schema
	ReadOnly    bool // the server annotates it read-only
}

// Server is a declared MCP server: a toolkits.Kit whose tools are the
// ones the server lists, named Name.TOOL.
type Server struct {
	Name string // the spec's name for it: its tools are Name.TOOL
	spec *spec.MCP
	// secrets are the environment variables its env reads: a server
	// that echoes one has it cut from the result.
	secrets []string

	once  sync.Once
	cli   *client.Client
	tools []Tool
	err   error
}

// New returns a Server for a declaration; nothing starts until it is used.
func New(name string, m *spec.MCP) *Server {
	s := &Server{Name: name, spec: m}
	for _, k := range slices.Sorted(maps.Keys(m.Env)) {
		s.secrets = append(s.secrets, m.Env[k].EnvNames()...)
	}
	s.secrets = append(s.secrets, m.InheritEnv...)
	return s
}

// Kit builds the Kit of an mcp declaration.
func Kit(t *spec.Tool) (toolkits.Kit, error) { return New(t.Name, t.MCP), nil }

var _ toolkits.Kit = (*Server)(nil)

// connect starts the server and lists its tools, once.
func (s *Server) connect(ctx context.Context) error {
	s.once.Do(func() { s.err = s.start(ctx) })
	return s.err
}

func (s *Server) start(ctx context.Context) error {
	var err error
	if s.spec.URL != "" {
		s.cli, err = client.NewStreamableHttpClient(s.spec.URL)
		if err == nil {
			err = s.cli.Start(ctx)
		}
	} else {
		// A minimal environment, as for exec tools.
		env := toolkits.ChildEnv(s.spec.InheritEnv)
		vars := tmpl.Env{"env": toolkits.EnvOf(s.secrets)}
		for _, k := range slices.Sorted(maps.Keys(s.spec.Env)) {
			v, rerr := s.spec.Env[k].Render(vars)
			if rerr != nil {
				return fmt.Errorf("mcp server %s: env %s: %w", s.Name, k, rerr)
			}
			env = append(env, k+"="+v)
		}
		s.cli, err = client.NewStdioMCPClientWithOptions(s.spec.Command[0], env, s.spec.Command[1:], transport.WithCommandFunc(command))
	}
	if err != nil {
		return fmt.Errorf("mcp server %s: start: %w", s.Name, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agentctl", Version: "0"}
	if _, err := s.cli.Initialize(ctx, init); err != nil {
		return fmt.Errorf("mcp server %s: initialize: %w", s.Name, err)
	}
	res, err := s.cli.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("mcp server %s: list tools: %w", s.Name, err)
	}
	for _, t := range res.Tools {
		var doc map[string]any
		raw := t.RawInputSchema
		if len(raw) == 0 {
			raw, _ = json.Marshal(t.InputSchema)
		}
		if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
			doc = map[string]any{"type": "object"}
		}
		ro := t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
		s.tools = append(s.tools, Tool{Name: t.Name, Description: t.Description, Input: spec.NewSchema(doc), ReadOnly: ro})
	}
	return nil
}

// command builds a stdio server's process with exactly env (mcp-go's own
// adds agentctl's whole environment).
func command(ctx context.Context, name string, env, args []string) (*osexec.Cmd, error) {
	cmd := osexec.CommandContext(ctx, name, args...)
	cmd.Env = env
	return cmd, nil
}

// Tools implements toolkits.Kit: the tools the server lists, starting it
// if needed.
func (s *Server) Tools(ctx context.Context) ([]toolkits.Tool, error) {
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	out := make([]toolkits.Tool, len(s.tools))
	for i := range s.tools {
		out[i] = &serverTool{s: s, t: &s.tools[i]}
	}
	return out, nil
}

// Describe implements toolkits.Kit.
func (s *Server) Describe() toolkits.Description {
	d := toolkits.Description{Action: "mcp server " + s.spec.URL, Env: toolkits.EnvNames(s.secrets)}
	if s.spec.URL == "" {
		d.Action = "mcp server " + strings.Join(s.spec.Command, " ")
	}
	if need, isConst := s.spec.RequireApproval.IsConst(); !isConst || need {
		d.Gate = append(d.Gate, "for its tools "+s.spec.RequireApproval.Source())
	}
	if s.spec.AutoApproveReadOnly {
		d.Gate = append(d.Gate, "(read-only tools free)")
	}
	return d
}

// serverTool is one of a server's tools, as a toolkits.Tool.
type serverTool struct {
	s *Server
	t *Tool
}

func (t *serverTool) Name() string        { return t.s.Name + "." + t.t.Name }
func (t *serverTool) Description() string { return t.t.Description }
func (t *serverTool) Input() *spec.Schema { return t.t.Input }
func (t *serverTool) Secrets() []string   { return t.s.secrets }

func (t *serverTool) Do(ctx context.Context, c toolkits.Call) (toolkits.Result, error) {
	return t.s.Call(ctx, t.t.Name, c)
}

// Approval is the server's declared condition over tool and input (the
// tool's own, else the server's), with read-only tools free when the
// spec says so.
func (t *serverTool) Approval(input, _ map[string]any) toolkits.Verdict {
	m := t.s.spec
	cond, perTool := m.Tools[t.t.Name]
	if !perTool {
		cond = m.RequireApproval
	}
	need, err := cond.Eval(tmpl.Env{"tool": t.t.Name, "input": input})
	if aerr := toolkits.Absent(cond, input); aerr != nil {
		err = aerr
	}
	switch {
	case err != nil:
		return toolkits.Verdict{Need: true, Reason: toolkits.ReasonFailed, Err: err}
	case need && t.t.ReadOnly && m.AutoApproveReadOnly && !perTool:
		return toolkits.Verdict{Reason: toolkits.ReasonReadOnly, Detail: t.t.Name}
	case need:
		return toolkits.Verdict{Need: true, Reason: toolkits.ReasonServer, Detail: cond.Source()}
	}
	return toolkits.Verdict{}
}

// Call calls one of the server's tools. A result the server flags as an
// error is a failed result the model sees.
func (s *Server) Call(ctx context.Context, tool string, c toolkits.Call) (toolkits.Result, error) {
	if err := s.connect(ctx); err != nil {
		return toolkits.Result{}, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = c.Input
	res, err := s.cli.CallTool(ctx, req)
	if err != nil {
		return toolkits.Result{}, fmt.Errorf("mcp %s.%s: %w", s.Name, tool, err)
	}
	var parts []string
	for _, ct := range res.Content {
		if tc, ok := mcp.AsTextContent(ct); ok {
			parts = append(parts, tc.Text)
		} else if b, err := json.Marshal(ct); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return toolkits.Result{Content: strings.Join(parts, "\n"), Failed: res.IsError}, nil
}

// Close stops the server, if it was started.
func (s *Server) Close() error {
	if s.cli == nil {
		return nil
	}
	return s.cli.Close()
}
