package engine

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
)

// state is a run's checkpoint: what the store keeps as Run.State. Results
// of ledger calls are not copied here; they live in the call ledger and
// join the conversation when it is sent to the model.
type state struct {
	// RequireApproval makes every tool call of the run wait for a human
	// (run --require-approval).
	RequireApproval bool `json:"requireApproval,omitempty"`
	// TurnStart is the step at which the latest user message arrived:
	// maxSteps bounds the model turns after it.
	TurnStart int `json:"turnStart,omitempty"`
	// MaxDepth bounds delegation depth in the run's tree: the root
	// agent's maxDepth, handed down to children.
	MaxDepth int `json:"maxDepth,omitempty"`
	// Model overrides the agent's model for this run (run --model).
	Model string `json:"model,omitempty"`
	// Replay is the cassette the run was started with (run --replay):
	// it is advanced only from a cassette, never by a live model.
	Replay string `json:"replay,omitempty"`
	// Trace is the W3C traceparent of the span the run's first advance
	// made, when tracing was on: later advances and decisions, in any
	// process, link to it.
	Trace string `json:"trace,omitempty"`
	// Labels are the run's labels (run --label), handed down its tree:
	// what policy rules see as labels.
	Labels   map[string]string `json:"labels,omitempty"`
	Messages []message         `json:"messages"`
}

// Usage counts a run's model calls and tokens.
type Usage = store.Usage

// addUsage counts one model call.
func addUsage(u *Usage, got model.Usage) {
	u.ModelCalls++
	u.InputTokens += got.InputTokens
	u.OutputTokens += got.OutputTokens
}

// message is one message of a run's conversation.
type message struct {
	Role      string         `json:"role"` // system, user, assistant or tool
	Text      string         `json:"text,omitempty"`
	ToolCalls []toolCallPart `json:"toolCalls,omitempty"`
	// CallID and Tool, for a tool message: the result of a call that is
	// not in the ledger (resume data extraction).
	CallID string `json:"callId,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// toolCallPart is a tool call as the model made it.
type toolCallPart struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	Args string `json:"args"` // as the model sent them
	// dropped is the size of arguments over Limits.MaxArgs, replaced by
	// {} before anything is stored.
	dropped int
}

func decodeState(r *store.Run) (*state, error) {
	var st state
	if err := json.Unmarshal(r.State, &st); err != nil {
		return nil, fmt.Errorf("run %s: corrupt checkpoint: %w", r.ID, err)
	}
	return &st, nil
}

func (st *state) encode() []byte {
	b, err := json.Marshal(st)
	if err != nil {
		panic(err) // only strings, ints and bools: cannot fail
	}
	return b
}

// conversation renders the checkpoint and the call ledger as the messages
// sent to a model: each assistant turn with tool calls is followed by one
// tool message per call.
func (st *state) conversation(calls []*store.Call) []model.Message {
	byID := make(map[string]*store.Call, len(calls))
	for _, c := range calls {
		byID[c.ID] = c
	}
	out := make([]model.Message, 0, len(st.Messages)+len(calls))
	for _, m := range st.Messages {
		switch m.Role {
		case "system", "user":
			out = append(out, model.Message{Role: model.Role(m.Role), Text: m.Text})
		case "tool":
			out = append(out, model.Message{Role: model.ToolRole, CallID: m.CallID, Tool: m.Tool, Text: m.Text})
		case "assistant":
			am := model.Message{Role: model.Assistant, Text: m.Text}
			for _, tc := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Tool, Args: tc.Args})
			}
			out = append(out, am)
			for _, tc := range m.ToolCalls {
				if c := byID[tc.ID]; c != nil {
					out = append(out, model.Message{Role: model.ToolRole, CallID: tc.ID, Tool: tc.Tool, Text: result(tc, c)})
				}
			}
		}
	}
	return out
}

// result is what the model is told of a call: its result, saying so when
// a human changed the arguments the model sent.
func result(tc toolCallPart, c *store.Call) string {
	var sent, ran any
	if json.Unmarshal([]byte(tc.Args), &sent) == nil && json.Unmarshal(c.Args, &ran) == nil &&
		!reflect.DeepEqual(sent, ran) && c.Status != store.CallDeclined {
		return fmt.Sprintf("A human changed the arguments to %s before approving.\n%s", c.Args, c.Result)
	}
	return c.Result
}
