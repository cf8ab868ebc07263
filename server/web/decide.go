package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentctl/agentctl/api"
)

// attempt is a decision the server refused, to show at its call.
type attempt struct {
	run, call string
	problem   *problem
	form      url.Values
}

// actions are the decisions a form may post.
var actions = map[string]bool{"approve": true, "decline": true, "resume": true, "retry": true, "resolve": true}

// decide is POST /runs/{id}/calls/{call}/{action}: the form's decision,
// made through POST /v1/runs/{id}/{action} as the signed-in user. Done,
// the browser goes back to the page it came from; refused, that page
// shows why at the call (the arguments' or the resume data's errors at
// their fields), with the API's status.
func (u *UI) decide(w http.ResponseWriter, r *http.Request, me who) {
	run, call, action := r.PathValue("id"), r.PathValue("call"), r.PathValue("action")
	back := safeNext(r.PostForm.Get("back"))
	if !actions[action] {
		u.page(w, r, http.StatusNotFound, "error", &view{Me: &me, Title: "Not found", Error: &problem{Message: "no such action: " + action}})
		return
	}
	req, p := requestOf(action, call, r.PostForm)
	status := http.StatusBadRequest
	if p == nil {
		status, p = u.apiCall(r, me, http.MethodPost, "/v1/runs/"+url.PathEscape(run)+"/"+action+"?wait=30s", req, nil)
	}
	if p == nil {
		sep := "?"
		if strings.Contains(back, "?") {
			sep = "&"
		}
		http.Redirect(w, r, back+sep+"done="+action, http.StatusSeeOther)
		return
	}
	failed := &attempt{run: run, call: call, problem: p, form: r.PostForm}
	// The page the form came from, as it stands now, with the refusal at
	// the call.
	bu, err := url.Parse(back)
	if err != nil {
		bu = &url.URL{Path: "/"}
	}
	r2 := r.Clone(r.Context())
	r2.URL = bu
	if id, ok := strings.CutPrefix(bu.Path, "/runs/"); ok && id != "" && !strings.Contains(id, "/") {
		r2.SetPathValue("id", id)
		u.renderRun(w, r2, me, status, failed)
		return
	}
	u.renderInbox(w, r2, me, status, failed)
}

// requestOf is the API request a form asks for; a form that cannot make
// one (arguments that are not JSON) is a problem at its field.
func requestOf(action, call string, f url.Values) (api.DecisionRequest, *problem) {
	req := api.DecisionRequest{Call: call, Reason: strings.TrimSpace(f.Get("reason"))}
	switch action {
	case "approve":
		if f.Get("edit") != "1" {
			req.PreviewDigest = f.Get("preview") // the preview the page showed: approve that or nothing
		}
		if f.Get("edit") == "1" {
			args := strings.TrimSpace(f.Get("args"))
			var v map[string]any
			if err := json.Unmarshal([]byte(args), &v); err != nil {
				return req, &problem{Message: "the arguments are not a JSON object: " + err.Error(),
					Details: []api.Detail{{Pointer: "/args", Message: "not a JSON object"}}}
			}
			req.Args = json.RawMessage(args)
		}
	case "resume":
		data, err := dataOf(f)
		if err != nil {
			return req, err
		}
		req.Data = data
	case "resolve":
		req.Output, req.Failed = f.Get("output"), f.Get("failed") == "1"
	}
	return req, nil
}

// dataOf builds resume data from a generated form: each field "d.NAME"
// with its type in "t.NAME"; a raw JSON field "data" is taken whole. A
// field that does not hold its type (letters for a number) is sent as
// the text it holds: the server's schema check then reports it, at its
// pointer, with every other problem of the data.
func dataOf(f url.Values) (json.RawMessage, *problem) {
	if raw := strings.TrimSpace(f.Get("data")); raw != "" {
		if !json.Valid([]byte(raw)) {
			return nil, &problem{Message: "the resume data is not JSON", Details: []api.Detail{{Pointer: "/data", Message: "not JSON"}}}
		}
		return json.RawMessage(raw), nil
	}
	obj := map[string]any{}
	for k := range f {
		if name, ok := strings.CutPrefix(k, "d."); ok {
			if v := value(f.Get("t."+name), f[k]); v != nil {
				obj[name] = v
			}
		}
	}
	b, _ := json.Marshal(obj)
	return b, nil
}

// value reads one field as its type says; an empty field is left out
// (nil), so that a required one is reported by the server's schema.
func value(typ string, all []string) any {
	if typ == "boolean" {
		return len(all) > 0 && all[len(all)-1] == "true"
	}
	s := ""
	if len(all) > 0 {
		s = strings.TrimSpace(all[len(all)-1])
	}
	if s == "" {
		return nil
	}
	switch typ {
	case "integer", "number", "json", "enum-json":
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			return v
		}
	}
	return s
}

// pointerEscape escapes a property name for a JSON pointer.
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
