package web

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/server"
)

// inboxView is the inbox: the waiting calls, as filtered.
type inboxView struct {
	Agent, Kind string
	Kinds       []string
	Items       []item
	Live        bool   // the list follows the server's events (readers only)
	Notice      string // why the list is limited, if it is
}

// item is one waiting call with what its forms need.
type item struct {
	api.Approval
	Why     string
	Who     string       // who may decide it
	Fields  []field      // a suspended call's resume form
	Err     *problem     // what the last attempt on it was refused for
	Edit    string       // the arguments as the edit form shows them
	ArgsErr []api.Detail // what is wrong with the edited arguments, by pointer
	Values  url.Values   // what the last attempt sent, to fill the form again
	// Escalation says what happened on the call's escalation ladder and
	// what is next; "" for none.
	Escalation string
}

// inbox is GET /: every call waiting for a human, filtered by agent and
// kind; ?partial=1 renders the list alone (the script's refresh).
func (u *UI) inbox(w http.ResponseWriter, r *http.Request, me who) {
	u.renderInbox(w, r, me, http.StatusOK, nil)
}

// renderInbox renders the inbox, with a refused attempt's problem at its
// call.
func (u *UI) renderInbox(w http.ResponseWriter, r *http.Request, me who, status int, failed *attempt) {
	q := r.URL.Query()
	iv := &inboxView{Agent: q.Get("agent"), Kind: q.Get("kind"), Kinds: []string{"approval", "suspend", "interrupted"},
		Live: u.s.Has(me.p, server.RoleReader)}
	if !iv.Live {
		iv.Notice = "You see the calls that name you as an approver. This list does not update by itself " +
			"(following the server's events needs the reader role): reload to see new calls."
	}
	path := "/v1/approvals?limit=1000"
	if iv.Agent != "" {
		path += "&agent=" + url.QueryEscape(iv.Agent)
	}
	if iv.Kind != "" {
		path += "&kind=" + url.QueryEscape(iv.Kind)
	}
	var list api.List[api.Approval]
	v := &view{Me: &me, Title: "Inbox", Inbox: iv, Partial: q.Get("partial") == "1", Flash: flash(q.Get("done"))}
	if st, p := u.apiCall(r, me, http.MethodGet, path, nil, &list); p != nil {
		v.Error = p
		u.page(w, r, st, "inbox", v)
		return
	}
	for _, a := range list.Items {
		iv.Items = append(iv.Items, itemOf(a, failed))
	}
	v.Error = unplaced(iv.Items, failed)
	u.page(w, r, status, "inbox", v)
}

// itemOf is an inbox item, with the refused attempt's problem if it was
// on this call.
func itemOf(a api.Approval, failed *attempt) item {
	it := item{Approval: a, Edit: pretty(a.Args), Who: "the server's approvers"}
	if len(a.Approvers) > 0 {
		it.Who = engine.PhraseApprovers(append([][]string{a.Approvers}, a.AlsoApprovers...))
	}
	if a.NotBy != "" {
		it.Who += "; not " + a.NotBy + ", who started the run (separateDuties)"
	}
	var esc engine.EscalationView
	if len(a.Escalation) > 0 && json.Unmarshal(a.Escalation, &esc) == nil {
		it.Escalation = esc.Phrase()
	}
	if len(a.Gate) > 0 {
		var g store.Gate
		if json.Unmarshal(a.Gate, &g) == nil {
			it.Why = g.Phrase()
		}
	}
	if a.Kind == string(store.KindSuspend) {
		it.Why = "the tool suspended itself and waits for resume data"
		it.Fields = fieldsOf(a.ResumeSchema)
	}
	if a.Kind == string(store.KindInterrupted) {
		it.Why = "the process running it stopped before the tool finished: it may or may not have taken effect. " +
			"Retry runs it again; Resolve records what was done by hand"
	}
	if a.GateError != "" {
		it.Why += " (" + a.GateError + ")"
	}
	if failed != nil && failed.run == a.RunID && failed.call == a.CallID {
		p := *failed.problem // its details move to their fields
		it.Err, it.Values = &p, failed.form
		if failed.form.Get("edit") == "1" {
			it.Edit, it.ArgsErr, p.Details = failed.form.Get("args"), p.Details, nil
		}
		placeErrors(it.Fields, &p)
	}
	return it
}

// unplaced is a refused attempt's problem when its call is no longer
// shown (another decided it meanwhile): the page shows it at the top.
func unplaced(items []item, failed *attempt) *problem {
	if failed == nil || slices.ContainsFunc(items, func(it item) bool { return it.Err != nil }) {
		return nil
	}
	return failed.problem
}

// runView is a run's page.
type runView struct {
	Detail       runDetail
	Conversation []engine.MessageView
	Pending      []item
}

// runDetail is GET /v1/runs/{id}?tree=true.
type runDetail struct {
	engine.RunDetail
	Children []treeNode `json:"children"`
}

// treeNode is a run of the tree under a run.
type treeNode struct {
	engine.RunView
	ParentCall string     `json:"parentCall"`
	Children   []treeNode `json:"children"`
}

// run is GET /runs/{id}: the run's input, conversation, calls with
// their results and times, decisions (refusals included) and tree, and
// the forms of its waiting calls.
func (u *UI) run(w http.ResponseWriter, r *http.Request, me who) {
	u.renderRun(w, r, me, http.StatusOK, nil)
}

func (u *UI) renderRun(w http.ResponseWriter, r *http.Request, me who, status int, failed *attempt) {
	id := r.PathValue("id")
	v := &view{Me: &me, Title: "Run", Flash: flash(r.URL.Query().Get("done"))}
	if id == "" || len(id) > 26 || strings.Trim(strings.ToUpper(id), "0123456789ABCDEFGHJKMNPQRSTVWXYZ") != "" {
		v.Error = &problem{Message: "no such run: run ids are 26 characters of 0-9 and A-Z"}
		u.page(w, r, http.StatusNotFound, "error", v)
		return
	}
	v.Title = "Run " + id
	rv := &runView{}
	if st, p := u.apiCall(r, me, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"?tree=true", nil, &rv.Detail); p != nil {
		if st == http.StatusForbidden && u.calls(w, r, me, id, failed) {
			return
		}
		v.Error = p
		u.page(w, r, st, "error", v)
		return
	}
	id = rv.Detail.RunID
	conv, err := u.s.Conversation(r.Context(), me.p, id)
	if err != nil {
		v.Error = &problem{Message: err.Error()}
		u.page(w, r, http.StatusForbidden, "error", v)
		return
	}
	rv.Conversation = conv
	var list api.List[api.Approval]
	if _, p := u.apiCall(r, me, http.MethodGet, "/v1/approvals?limit=1000", nil, &list); p == nil {
		for _, a := range list.Items {
			if a.RootID == rv.Detail.RootID && (a.RunID == id || under(rv.Detail.Children, a.RunID)) {
				rv.Pending = append(rv.Pending, itemOf(a, failed))
			}
		}
	}
	v.Run = rv
	v.Error = unplaced(rv.Pending, failed)
	u.page(w, r, status, "run", v)
}

// calls renders, for one who may not read run id but is named as an
// approver of its waiting calls (a link in a notification), those calls
// alone; false when there are none.
func (u *UI) calls(w http.ResponseWriter, r *http.Request, me who, id string, failed *attempt) bool {
	var list api.List[api.Approval]
	if _, p := u.apiCall(r, me, http.MethodGet, "/v1/approvals?limit=1000", nil, &list); p != nil {
		return false
	}
	iv := &inboxView{Notice: "Reading run " + id + " needs the reader role; you see its calls that name you as an approver."}
	for _, a := range list.Items {
		if a.RunID == id {
			iv.Items = append(iv.Items, itemOf(a, failed))
		}
	}
	if len(iv.Items) == 0 {
		return false
	}
	v := &view{Me: &me, Title: "Run " + id, Inbox: iv, Error: unplaced(iv.Items, failed)}
	u.page(w, r, http.StatusOK, "inbox", v)
	return true
}

// under reports whether run id is in the trees.
func under(nodes []treeNode, id string) bool {
	return slices.ContainsFunc(nodes, func(n treeNode) bool { return n.RunID == id || under(n.Children, id) })
}

// loginView is the sign-in form.
type loginView struct{ Next string }

func (u *UI) loginForm(w http.ResponseWriter, r *http.Request) {
	u.page(w, r, http.StatusOK, "login", &view{Title: "Sign in", Login: &loginView{Next: safeNext(r.URL.Query().Get("next"))}})
}

// login is POST /login: the form's token starts a session (a cookie,
// HttpOnly, Secure, SameSite=Lax), and the browser goes to / (or where
// it was going).
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := "/"
	if err := r.ParseForm(); err == nil {
		next = safeNext(r.PostForm.Get("next"))
	}
	cookie, expires, err := u.s.SignIn(r, r.PostForm.Get("token"))
	if err != nil {
		status := http.StatusServiceUnavailable
		switch {
		case errors.Is(err, server.ErrSignIn):
			status = http.StatusUnauthorized
		case errors.Is(err, server.ErrSignInLimited):
			status = http.StatusTooManyRequests
		case errors.Is(err, server.ErrCrossSite), errors.Is(err, server.ErrNameRefused):
			status = http.StatusForbidden
		}
		u.page(w, r, status, "login", &view{Title: "Sign in", Login: &loginView{Next: next},
			Error: &problem{Message: err.Error(), Hint: "paste a token from agentctl token create --user NAME"}})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: server.SessionCookie, Value: cookie, Path: "/", Expires: expires,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout is POST /logout: the session ends, here and on the server.
func (u *UI) logout(w http.ResponseWriter, r *http.Request, me who) {
	if c, err := r.Cookie(server.SessionCookie); err == nil {
		u.s.SignOut(r.Context(), c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: server.SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// events is GET /events: the feed of every run, for the inbox's live
// updates.
func (u *UI) events(w http.ResponseWriter, r *http.Request, me who) {
	u.s.Events(w, r, me.p)
}

// safeNext keeps a redirect on this server: a path, never another host.
// Anything a browser could read as more than a path (a control
// character, whitespace, a backslash, "//") is refused, and the path
// must come back unchanged from parsing with no scheme or host.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || len(next) > 2048 ||
		strings.ContainsFunc(next, func(r rune) bool { return r <= ' ' || r == '\\' || r == 0x7f || unicode.IsSpace(r) }) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}

// flash says what a decision did, from the ?done= of the redirect.
func flash(done string) string {
	switch done {
	case "approve":
		return "Approved."
	case "decline":
		return "Declined."
	case "resume":
		return "Resumed."
	case "retry":
		return "Retried."
	case "resolve":
		return "Resolved."
	}
	return ""
}

// pretty indents JSON for a form, as it is when it is not JSON, with
// <, > and & as they are (the template escapes them; JSON's \u0026 would
// not read as what the tool gets).
func pretty(b json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers as they are written
	var v any
	if dec.Decode(&v) != nil {
		return visible(string(b))
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return visible(string(b))
	}
	return jsonVisible(strings.TrimSuffix(out.String(), "\n"))
}

// jsonVisible writes the invisible characters of valid JSON (in its
// strings: nowhere else may they be) as JSON escapes: the same value,
// shown, and taken back as it was when an edited copy is sent.
func jsonVisible(s string) string {
	if !strings.ContainsFunc(s, hiddenInJSON) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !hiddenInJSON(r) {
			b.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, "\\u%04x", u)
		}
	}
	return b.String()
}

// hiddenInJSON is hidden but for the whitespace indented JSON holds.
func hiddenInJSON(r rune) bool { return r != '\r' && hidden(r) }

// visible shows what a text holds, invisible characters included: bidi
// controls, zero-width and other format characters, and control
// characters but newline and tab are written as \u{XXXX}, so that what
// an approver reads is what runs (U+202E cannot show "gnp.exe" as
// "exe.png").
func visible(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "\\u{%04X}", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hidden reports whether a character does not show as itself.
func hidden(r rune) bool {
	return r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError)
}

// randomKey is a fresh random key.
func randomKey() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// age says how long ago t was, briefly.
func age(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return d.String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Hour).String()
}
