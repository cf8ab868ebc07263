// Package web is the approval inbox agentctl serve shows a browser: the
// calls waiting for a human across runs and trees, live; a page per run
// with its conversation, calls, decisions and tree; and forms that
// approve (arguments edited or not), decline, resume, retry and resolve.
//
// Pages are rendered on the server (html/template) with the assets
// embedded; the one script only refreshes the inbox as events arrive.
// Every decision goes through the server's own /v1 routes, in-process,
// as the signed-in user (server.Server.Call): the same roles, approver
// policy, audit and race guarantees as the API and the CLI. A browser
// signs in with a token into a session cookie (HttpOnly, Secure,
// SameSite=Lax), or is identified by the trusted proxy's header; every
// state-changing request but POST /login carries a CSRF token derived
// from the session (or, behind the proxy, from a per-browser cookie).
package web

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/token"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// csrfCookie keys the CSRF tokens of a browser behind the trusted proxy,
// which has no session.
const csrfCookie = "agentctl_csrf"

// UI serves the inbox.
type UI struct {
	s    *server.Server
	t    *template.Template
	mux  *http.ServeMux
	now  func() time.Time
	root string // the URL path the UI is served under: "" for /
}

// New returns the inbox of s, for server.Options.UI.
func New(s *server.Server) http.Handler {
	u := &UI{s: s, now: time.Now, mux: http.NewServeMux()}
	u.t = template.Must(template.New("").Funcs(funcs()).ParseFS(templateFS, "templates/*.html"))
	assets, _ := fs.Sub(assetFS, "assets")
	u.handle("GET /{$}", u.inbox)
	u.handle("GET /runs/{id}", u.run)
	u.handle("POST /runs/{id}/calls/{call}/{action}", u.decide)
	u.handle("POST /logout", u.logout)
	u.handle("GET /events", u.events)
	u.mux.HandleFunc("GET /login", u.route("GET /login", u.loginForm))
	u.mux.HandleFunc("POST /login", u.route("POST /login", u.login))
	files := http.StripPrefix("/assets/", http.FileServerFS(assets))
	u.mux.Handle("GET /assets/{file}", u.route("GET /assets/", files.ServeHTTP)) // files, never a listing
	u.mux.Handle("GET /favicon.ico", u.route("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	u.mux.HandleFunc("/", u.route("ui 404", func(w http.ResponseWriter, r *http.Request) {
		u.page(w, r, http.StatusNotFound, "error", &view{Title: "Not found", Error: &problem{Message: "no such page: " + r.URL.Path}})
	}))
	return u.mux
}

// route names a route for the server's log and metrics.
func (u *UI) route(pattern string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		server.Route(r, pattern)
		h(w, r)
	}
}

// who is a signed-in browser: its principal and the key its CSRF tokens
// derive from.
type who struct {
	p   *server.Principal
	key string
}

// handle registers a page for signed-in browsers: one that is not is
// sent to /login, and a POST without the CSRF token is refused (403)
// before anything is done.
func (u *UI) handle(pattern string, h func(w http.ResponseWriter, r *http.Request, me who)) {
	u.mux.HandleFunc(pattern, u.route(pattern, func(w http.ResponseWriter, r *http.Request) {
		if tokenInQuery(r.URL.Query()) {
			u.page(w, r, http.StatusBadRequest, "error", &view{Title: "Refused", Error: &problem{Message: "a token in the URL is refused",
				Hint: "sign in at /login instead; then revoke this token (agentctl token revoke): URLs are logged"}})
			return
		}
		p, session, err := u.s.Browser(r)
		if errors.Is(err, server.ErrNameRefused) {
			u.page(w, r, http.StatusForbidden, "error", &view{Title: "Name refused", Error: &problem{Message: err.Error(), Hint: "docs/server.md#names says which names the server takes"}})
			return
		}
		if err != nil {
			if r.Method == http.MethodGet && r.URL.Path != "/events" {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			u.page(w, r, http.StatusUnauthorized, "error", &view{Title: "Sign in", Error: &problem{Message: "not signed in", Hint: "sign in at /login"}})
			return
		}
		me := who{p: p, key: session}
		if session == "" {
			me.key = u.csrfKey(w, r)
		}
		if r.Method == http.MethodPost {
			if status, err := u.checkPost(w, r, me); err != nil {
				u.page(w, r, status, "error", &view{Me: &me, Title: "Refused", Error: &problem{Message: err.Error()}})
				return
			}
		}
		h(w, r, me)
	}))
}

// tokenInQuery reports whether a query carries what looks like a token:
// URLs end up in logs and histories.
func tokenInQuery(q url.Values) bool {
	for k, vs := range q {
		if k = strings.ToLower(k); k == "token" || k == "access_token" {
			return true
		}
		for _, v := range vs {
			if strings.Contains(v, token.Prefix) {
				return true
			}
		}
	}
	return false
}

// csrfKey is what the CSRF tokens of a browser without a session (the
// proxy's user) derive from: its own per-browser cookie, made now if it
// has none.
func (u *UI) csrfKey(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	v := randomKey()
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	return v
}

// checkPost refuses a state-changing request without the CSRF token, or
// from another site.
func (u *UI) checkPost(w http.ResponseWriter, r *http.Request, me who) (int, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return http.StatusRequestEntityTooLarge, fmt.Errorf("the form is over %d MiB", maxForm>>20)
		}
		return http.StatusBadRequest, errors.New("the form could not be read")
	}
	if !u.s.CheckCSRF(r, me.p, me.key, r.PostForm.Get("csrf")) {
		return http.StatusForbidden, errors.New("the form's CSRF token is missing or wrong, or it came from another site: reload the page and try again")
	}
	return 0, nil
}

// maxForm bounds a form's body.
const maxForm = 2 << 20

// view is what every template renders.
type view struct {
	Me      *who
	User    string // who is signed in
	CSRF    string
	Title   string
	Flash   string
	Error   *problem
	Inbox   *inboxView
	Run     *runView
	Login   *loginView
	Partial bool
}

// problem is an error shown on a page: the API's message and hint, and
// its details by JSON pointer.
type problem struct {
	Message string
	Hint    string
	Details []api.Detail
}

// page renders a whole page, or with Partial the inbox's list alone.
func (u *UI) page(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	if v.Me != nil {
		v.CSRF, v.User = u.s.CSRF(v.Me.p, v.Me.key), v.Me.p.Name
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	tmpl := name
	if v.Partial {
		tmpl = name + "-list"
	}
	if err := u.t.ExecuteTemplate(w, tmpl, v); err != nil {
		fmt.Fprintf(w, "<p>the page could not be rendered: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}

// apiCall calls a /v1 route as me and decodes a 2xx body into out; any
// other answer is a *problem with its status.
func (u *UI) apiCall(r *http.Request, me who, method, path string, body, out any) (int, *problem) {
	status, b, err := u.s.Call(r.Context(), me.p, method, path, body)
	if err != nil {
		return http.StatusInternalServerError, &problem{Message: err.Error()}
	}
	if status/100 == 2 {
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				return http.StatusInternalServerError, &problem{Message: "the server's answer could not be read: " + err.Error()}
			}
		}
		return status, nil
	}
	var e api.ErrorBody
	if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
		return status, &problem{Message: strings.TrimSpace(string(b))}
	}
	return status, &problem{Message: e.Error.Message, Hint: e.Error.Hint, Details: e.Error.Details}
}
