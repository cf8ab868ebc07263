package notify

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestActionValue(t *testing.T) {
	v := ActionValue(testRunID, "call_1.a-B")
	if v != testRunID+"/call_1.a-B" {
		t.Errorf("ActionValue = %q", v)
	}
	run, call, err := ParseActionValue(v)
	if err != nil || run != testRunID || call != "call_1.a-B" {
		t.Errorf("ParseActionValue = %q, %q, %v", run, call, err)
	}
	for _, bad := range []string{
		"", "/", testRunID, testRunID + "/", "/call_1", testRunID + "/call_1//call_2", testRunID + "/call_1/", testRunID + "/call_1/../x y",
		strings.ToLower(testRunID) + "/call_1", "01JD3F8Q2W5X7Y9Z0ABCDEFGHI/call_1", "01JD3F8Q2W5X7Y9Z0ABCDEFGHU/c",
		testRunID[:25] + "/c", testRunID + "J/c", testRunID + "/" + strings.Repeat("c", 65),
		testRunID + "/call 1", testRunID + "/call\n", " " + testRunID + "/c", testRunID + "/c\x00",
		testRunID + "/é", `{"run":"x"}`, testRunID + "\\c",
	} {
		if r, c, err := ParseActionValue(bad); !errors.Is(err, ErrBadActionValue) || r != "" || c != "" {
			t.Errorf("ParseActionValue(%q) = %q, %q, %v", bad, r, c, err)
		} else if bad != "" && len(bad) > 3 && strings.Contains(err.Error(), bad) {
			t.Errorf("the error holds the value: %v", err)
		}
	}
	if _, _, err := ParseActionValue(testRunID + "/" + strings.Repeat("c", 64)); err != nil {
		t.Errorf("a 64-character call id: %v", err)
	}
}

func TestDeclineView(t *testing.T) {
	meta := `{"r":"` + testRunID + `","c":"call_1","ch":"C1","ts":"1.2"}`
	raw := DeclineView(testRunID+"/call_1", meta)
	var v struct {
		Type            string    `json:"type"`
		CallbackID      string    `json:"callback_id"`
		PrivateMetadata string    `json:"private_metadata"`
		Title           slackText `json:"title"`
		Submit          slackText `json:"submit"`
		Close           slackText `json:"close"`
		Blocks          []struct {
			Type     string    `json:"type"`
			BlockID  string    `json:"block_id"`
			Optional bool      `json:"optional"`
			Label    slackText `json:"label"`
			Element  struct {
				Type      string `json:"type"`
				ActionID  string `json:"action_id"`
				Multiline bool   `json:"multiline"`
				MaxLength int    `json:"max_length"`
			} `json:"element"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	pt := func(s string) slackText { return slackText{"plain_text", s} }
	if v.Type != "modal" || v.CallbackID != "agentctl.decline" || v.PrivateMetadata != meta ||
		v.Title != pt("Decline") || v.Submit != pt("Decline") || v.Close != pt("Cancel") {
		t.Errorf("view %s", raw)
	}
	var inputs int
	for _, b := range v.Blocks {
		if b.Type != "input" {
			continue
		}
		inputs++
		e := b.Element
		if b.BlockID != "reason" || b.Label != pt("Why not (the model is told)") || e.Type != "plain_text_input" || e.ActionID != "reason" || !e.Multiline || e.MaxLength != 1000 {
			t.Errorf("input block %+v", b)
		}
	}
	if inputs != 1 {
		t.Errorf("%d input blocks: %s", inputs, raw)
	}
	if !strings.Contains(string(raw), "call_1") {
		t.Errorf("the view does not name the call: %s", raw)
	}
	for _, s := range oddStrings {
		if raw := DeclineView(s, s); !json.Valid(raw) {
			t.Errorf("DeclineView(%q) is not JSON: %s", s, raw)
		}
	}
}

func TestDeclineReason(t *testing.T) {
	tests := []struct{ values, want string }{
		{`{"reason":{"reason":{"type":"plain_text_input","value":"not during the freeze <@U1>"}}}`, "not during the freeze <@U1>"},
		{`{"other":{"x":{"value":"no"}},"reason":{"reason":{"type":"plain_text_input","value":"a\nb"}}}`, "a\nb"},
		{`{"reason":{"reason":{"type":"plain_text_input","value":null}}}`, ""},
		{`{"reason":{"reason":{"type":"plain_text_input"}}}`, ""},
		{`{"reason":{}}`, ""},
		{`{}`, ""},
		{`null`, ""},
		{``, ""},
		{`[1,2]`, ""},
		{`{"reason":{"reason":{"value":5}}}`, ""},
		{`{"reason":`, ""},
	}
	for _, tt := range tests {
		if got := DeclineReason(json.RawMessage(tt.values)); got != tt.want {
			t.Errorf("DeclineReason(%s) = %q, want %q", tt.values, got, tt.want)
		}
	}
}

// blockIDs returns the block_id (or type) of every block of raw.
func blockIDs(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var blocks []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Text string `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("not blocks: %v\n%s", err, raw)
	}
	var ids []string
	for _, b := range blocks {
		id := b.BlockID
		if id == "" {
			id = b.Type
		}
		if id == "agentctl.status" {
			id += "=" + b.Elements[0].Text
		}
		ids = append(ids, id)
	}
	return ids
}

func TestDecidedBlocks(t *testing.T) {
	echoed := `[{"type":"header","block_id":"h","text":{"type":"plain_text","text":"Approval needed: x","emoji":true}},` +
		`{"type":"section","block_id":"f","fields":[{"type":"mrkdwn","text":"*Run*\n` + "`x`" + `","verbatim":false}]},` +
		`{"type":"actions","block_id":"agentctl.actions","elements":[{"type":"button","action_id":"agentctl.approve","value":"v"}]},` +
		`{"type":"context","block_id":"c","elements":[{"type":"mrkdwn","text":"Decide: ..."}]}]`
	tests := []struct {
		name, in, status string
		keep             bool
		want             string
	}{
		{"approved", echoed, "Approved by <@U1> & done", false, "h f agentctl.status=Approved by &lt;@U1&gt; &amp; done c"},
		{"first of two", echoed, "1 of 2 approvals: alice", true, "h f agentctl.status=1 of 2 approvals: alice agentctl.actions c"},
		{"no status", echoed, "", false, "h f c"},
		{"no actions", `[{"type":"divider"}]`, "Declined", false, "divider agentctl.status=Declined"},
		{"empty", `[]`, "Declined", true, "agentctl.status=Declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := DecidedBlocks(json.RawMessage(tt.in), tt.status, tt.keep)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(blockIDs(t, out), " "); got != tt.want {
				t.Errorf("blocks %s, want %s", got, tt.want)
			}
			// A second decision replaces the first's status.
			again, err := DecidedBlocks(out, "Approved by bob", false)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(again), "agentctl.status"); n != 1 || strings.Contains(string(again), "agentctl.actions") || !strings.Contains(string(again), "Approved by bob") {
				t.Errorf("second decision: %s", again)
			}
		})
	}
	out, _ := DecidedBlocks(json.RawMessage(echoed), "ok", false)
	if !strings.Contains(string(out), `"emoji":true`) || !strings.Contains(string(out), `"verbatim":false`) {
		t.Errorf("the other blocks are not kept as given: %s", out)
	}
	long, _ := DecidedBlocks(json.RawMessage(`[]`), strings.Repeat("<", 2000), false)
	if ids := blockIDs(t, long); units(strings.TrimPrefix(ids[0], "agentctl.status=")) > 3000 {
		t.Errorf("the status is not cut: %d", units(ids[0]))
	}
	for _, bad := range []string{``, `{`, `{}`, `null`, `"x"`, `[1]`, `[{"type":"x"},null]`, `[[]]`, `[{"block_id":5}]`} {
		if out, err := DecidedBlocks(json.RawMessage(bad), "x", false); err == nil {
			t.Errorf("DecidedBlocks(%s) = %s, want an error", bad, out)
		}
	}
}

func TestDecidedBlocksLimit(t *testing.T) {
	var blocks []string
	for i := range 60 {
		blocks = append(blocks, fmt.Sprintf(`{"type":"section","block_id":"b%d","text":{"type":"mrkdwn","text":"x"}}`, i))
		if i == 40 {
			blocks = append(blocks, `{"type":"actions","block_id":"agentctl.actions","elements":[]}`, `{"type":"context","block_id":"agentctl.status","elements":[{"type":"mrkdwn","text":"old"}]}`)
		}
	}
	in := json.RawMessage("[" + strings.Join(blocks, ",") + "]")
	for _, keep := range []bool{true, false} {
		out, err := DecidedBlocks(in, "new", keep)
		if err != nil {
			t.Fatal(err)
		}
		ids := blockIDs(t, out)
		all := strings.Join(ids, " ")
		if len(ids) != 50 || ids[0] != "b0" || ids[len(ids)-1] != "b59" || !strings.Contains(all, "agentctl.status=new") || strings.Contains(all, "old") {
			t.Errorf("keep %v: %d blocks: %s", keep, len(ids), all)
		}
		if strings.Contains(all, "agentctl.actions") != keep {
			t.Errorf("keep %v: %s", keep, all)
		}
	}
}

func FuzzDecidedBlocks(f *testing.F) {
	f.Add([]byte(`[{"type":"actions","block_id":"agentctl.actions"}]`), "s", true)
	f.Add([]byte(`[{"block_id":"agentctl.status"},{"block_id":"agentctl.status"}]`), "", false)
	f.Fuzz(func(t *testing.T, raw []byte, status string, keep bool) {
		out, err := DecidedBlocks(raw, status, keep)
		if err != nil {
			return
		}
		var blocks []json.RawMessage
		if json.Unmarshal(out, &blocks) != nil || len(blocks) > 50 {
			t.Fatalf("DecidedBlocks = %s", out)
		}
		ParseActionValue(string(raw))
		DeclineReason(raw)
	})
}

// ApproveView asks a reason that may not be left out, under its own
// callback_id.
func TestApproveView(t *testing.T) {
	raw := ApproveView(testRunID+"/call_1", "meta")
	var v struct {
		CallbackID string    `json:"callback_id"`
		Title      slackText `json:"title"`
		Blocks     []struct {
			Type     string `json:"type"`
			BlockID  string `json:"block_id"`
			Optional bool   `json:"optional"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if v.CallbackID != ApproveCallbackID || v.Title.Text != "Approve" || len(v.Blocks) != 2 || v.Blocks[0].BlockID != ReasonBlockID ||
		v.Blocks[0].Optional || !strings.Contains(string(raw), "Approving call `call_1`") {
		t.Errorf("view %s", raw)
	}
}
