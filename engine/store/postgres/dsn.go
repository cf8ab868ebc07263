package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrBadDSN reports a database string that names no database agentctl
// can open: an unknown URL scheme, unknown key=value settings, or a URL
// it cannot parse. Nothing was created.
var ErrBadDSN = errors.New("not a database agentctl can open")

// Accepted says which database strings agentctl takes, for messages.
const Accepted = "want a SQLite file path, a postgres:// or postgresql:// URL, or PostgreSQL key=value settings (host=... dbname=...)"

// IsURL reports whether s is a postgres:// or postgresql:// URL.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// IsDSN reports whether s names a PostgreSQL database: a URL, or libpq
// key=value settings ("host=db dbname=ops user=bob").
func IsDSN(s string) bool { return IsURL(s) || IsKeyValue(s) }

// IsKeyValue reports whether s is libpq key=value settings: its first
// word is a setting's name followed by "=". Whether every key is one
// PostgreSQL knows is for Check.
func IsKeyValue(s string) bool { return kvStart().MatchString(s) }

var (
	kvStart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`) })
	kvPair  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|(?:[^\s\\]|\\.)*)`)
	})
	urlScheme = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`) })
	// postgres: or postgresql: without the two slashes of a URL
	pgNoSlashes = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?i)(postgres(?:ql)?):(?:/?[^/]|$)`) })
	// a password in a URL's query or in key=value settings
	queryPW = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)([?&](?:ssl)?password=)[^&#]*`) })
)

// keywords are the connection settings libpq (and pgx) know.
var keywords = words(`host hostaddr port dbname user password passfile channel_binding
	connect_timeout client_encoding options application_name fallback_application_name keepalives
	keepalives_idle keepalives_interval keepalives_count tcp_user_timeout replication gssencmode
	sslmode requiressl sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl
	sslcrldir sslsni sslnegotiation requirepeer ssl_min_protocol_version ssl_max_protocol_version
	krbsrvname gsslib gssdelegation service target_session_attrs load_balance_hosts
	min_read_buffer_size statement_cache_capacity default_query_exec_mode search_path timezone`)

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// Check says whether s is a database string agentctl accepts: for a
// string that looks like a URL or like key=value settings, anything else
// than a postgres:// URL or settings PostgreSQL knows is ErrBadDSN (a
// plain path is a SQLite file). Its message shows s with its password
// masked.
func Check(s string) error {
	switch {
	case IsURL(s):
		return checkURL(s)
	case IsKeyValue(s):
		for _, m := range kvPair().FindAllStringSubmatch(s, -1) {
			if !keywords[strings.ToLower(m[1])] {
				return fmt.Errorf("database %q: %w: unknown setting %q; %s (write ./%s for a file of that name)",
					Redact(s), ErrBadDSN, m[1], Accepted, Redact(firstWord(s)))
			}
		}
		if _, err := pgconn.ParseConfig(s); err != nil {
			return fmt.Errorf("database %q: %w: %v", Redact(s), ErrBadDSN, scrub(unwrapParse(err), s))
		}
		return nil
	}
	if m := pgNoSlashes().FindStringSubmatch(s); m != nil {
		// Not a file name anyone means: it would print its password in
		// "directory ... does not exist".
		return fmt.Errorf("database string %s...: %w: a PostgreSQL URL starts %s://; %s", m[1]+":", ErrBadDSN, m[1], Accepted)
	}
	if m := urlScheme().FindStringSubmatch(s); m != nil {
		return fmt.Errorf("database %q: %w: unknown scheme %q; %s", Redact(s), ErrBadDSN, m[1], Accepted)
	}
	return nil
}

// checkURL refuses a URL whose user or password holds a character that
// must be escaped there: PostgreSQL ends the user and password at the
// first "@" (before any "/"), and would take the rest of the password for
// the host, and print it in its errors.
func checkURL(s string) error {
	before, after, _ := strings.Cut(s[strings.Index(s, "://")+3:], "/")
	path, _, _ := strings.Cut(after, "?")
	if strings.Count(before, "@") > 1 || strings.Contains(path, "@") {
		return fmt.Errorf("database %q: %w: an \"@\" or \"/\" in its user or password must be URL-escaped (@ as %%40, / as %%2F)",
			Redact(s), ErrBadDSN)
	}
	if _, err := pgconn.ParseConfig(s); err != nil {
		return fmt.Errorf("database %q: %w: %v", Redact(s), ErrBadDSN, scrub(unwrapParse(err), s))
	}
	return nil
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return s
	}
	return f[0]
}

// Redact returns a database string with every password masked, whatever
// it holds: the password of a URL's user (everything between the user's
// ":" and the last "@"), password and sslpassword in its query, and the
// same settings in key=value form. It never fails; a string it cannot
// parse is masked more, not less.
func Redact(dsn string) string {
	const mask = "xxxxx"
	if IsURL(dsn) || urlScheme().MatchString(dsn) {
		dsn = queryPW().ReplaceAllString(dsn, "${1}"+mask)
		i := strings.Index(dsn, "://") + 3
		if at := strings.LastIndex(dsn[i:], "@"); at >= 0 {
			info := dsn[i : i+at]
			if c := strings.Index(info, ":"); c >= 0 {
				return dsn[:i] + info[:c+1] + mask + dsn[i+at:]
			}
		}
		return dsn
	}
	if IsKeyValue(dsn) {
		// A value shows only under a key known to hold no secret: a
		// mistyped "passwrd" hides its value too.
		return kvPair().ReplaceAllStringFunc(dsn, func(pair string) string {
			m := kvPair().FindStringSubmatch(pair)
			if k := strings.ToLower(m[1]); keywords[k] && k != "password" && k != "sslpassword" {
				return pair
			}
			return pair[:len(pair)-len(m[2])] + mask
		})
	}
	return dsn
}

// unwrapParse is what pgx found wrong with a database string, without
// the string (which pgx masks as best it can, not always well enough).
func unwrapParse(err error) string {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			return msg[i+3:]
		}
		return "cannot parse it"
	}
	return msg
}

// secrets are the passwords a database string holds, as written and
// decoded.
func secrets(dsn string) []string {
	var out []string
	add := func(v string) {
		if v != "" {
			out = append(out, v)
			if d, err := url.PathUnescape(v); err == nil && d != v {
				out = append(out, d)
			}
		}
	}
	switch {
	case IsURL(dsn):
		for _, m := range queryPW().FindAllStringIndex(dsn, -1) {
			_, v, _ := strings.Cut(dsn[m[0]:m[1]], "=")
			add(v)
		}
		rest := queryPW().ReplaceAllString(dsn[strings.Index(dsn, "://")+3:], "${1}")
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				add(pw)
				for _, part := range strings.FieldsFunc(pw, func(r rune) bool { return strings.ContainsRune("@/?#:", r) }) {
					if len(part) >= 4 {
						add(part)
					}
				}
			}
		}
	case IsKeyValue(dsn):
		for _, m := range kvPair().FindAllStringSubmatch(dsn, -1) {
			if k := strings.ToLower(m[1]); k == "password" || k == "sslpassword" {
				v := strings.Trim(m[2], "'")
				add(v)
				add(strings.NewReplacer(`\\`, `\`, `\'`, `'`).Replace(v))
			}
		}
	}
	// the longest first, so that a shorter one inside it leaves no trace
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// scrub masks the passwords of dsn wherever msg shows them.
func scrub(msg, dsn string) string {
	for _, s := range secrets(dsn) {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	return msg
}

// scrubbed is an error whose message shows no password of its database
// string; it unwraps to the error it masks.
type scrubbed struct {
	err error
	dsn string
}

func (e *scrubbed) Error() string { return scrub(e.err.Error(), e.dsn) }
func (e *scrubbed) Unwrap() error { return e.err }

// Scrub returns err with every password of dsn masked in its message;
// nil stays nil.
func Scrub(err error, dsn string) error {
	if err == nil {
		return nil
	}
	return &scrubbed{err: err, dsn: dsn}
}
