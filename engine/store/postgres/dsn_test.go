package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store/postgres"
)

// TestRedact masks a password wherever a database string carries it,
// whatever it holds.
func TestRedact(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://bob:s3cret@db/ops":                                  "postgres://bob:xxxxx@db/ops",
		"postgres://bob@db/ops?password=s3cret&sslmode=disable":         "postgres://bob@db/ops?password=xxxxx&sslmode=disable",
		"postgres://bob:p%40ss%3Aw@db/ops?sslpassword=k3y":              "postgres://bob:xxxxx@db/ops?sslpassword=xxxxx",
		"postgresql://db/ops?sslmode=require&application_name=agentctl": "postgresql://db/ops?sslmode=require&application_name=agentctl",
		// raw characters that have a meaning in a URL
		"postgres://bob:s3c@r3t@db/ops":         "postgres://bob:xxxxx@db/ops",
		"postgres://bob:s3c:r/3t@db/ops":        "postgres://bob:xxxxx@db/ops",
		"postgres://bob:s3c?r#3t@db/ops":        "postgres://bob:xxxxx@db/ops",
		"postgres://bob@db/ops?password=s@3c&x": "postgres://bob@db/ops?password=xxxxx&x",
		"postgress://bob:s3cret@db/ops":         "postgress://bob:xxxxx@db/ops",
		// libpq key=value settings
		"host=db user=bob password=s3cret dbname=ops": "host=db user=bob password=xxxxx dbname=ops",
		`host=db password='s3 c\'ret' dbname=ops`:     "host=db password=xxxxx dbname=ops",
		"host=db PASSWORD = s3cret sslpassword=k3y":   "host=db PASSWORD = xxxxx sslpassword=xxxxx",
		"/var/lib/agentctl/agentctl.db":               "/var/lib/agentctl/agentctl.db",
	} {
		got := postgres.Redact(dsn)
		if got != want {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
		for _, secret := range []string{"s3c", "r3t", "p%40ss", "k3y", "3t"} {
			if strings.Contains(got, secret) {
				t.Errorf("Redact(%q) = %q: the secret shows", dsn, got)
			}
		}
	}
}

// TestCheck accepts file paths, postgres URLs and known key=value
// settings, and refuses other schemes, unknown settings and URLs whose
// password PostgreSQL would split, without showing the password.
func TestCheck(t *testing.T) {
	for _, ok := range []string{
		"agentctl.db", "/var/lib/agentctl/agentctl.db", "./host=x.db", "file.db?x",
		"postgres://bob:s3cret@db/ops", "postgresql://db/ops?sslmode=disable",
		"postgres://bob:p%40ss@db/ops?application_name=a@b",
		"host=db dbname=ops user=bob password=s3cret sslmode=disable",
		"dbname=ops", `host=db password='a b\'c'`,
	} {
		if err := postgres.Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	for dsn, want := range map[string]string{
		"postgress://bob:s3cret@db/ops":     `unknown scheme "postgress"`,
		"mysql://root:s3cret@db/ops":        `unknown scheme "mysql"`,
		"hots=db password=s3cret":           `unknown setting "hots"`,
		"host=db passwrd=s3cret":            `unknown setting "passwrd"`,
		"postgres://bob:s3c@ret@db/ops":     "must be URL-escaped",
		"postgres://bob:s3c/ret@db/ops":     "must be URL-escaped",
		"host=db password='s3cret":          "password=xxxxx",
		"postgres://bob:s3cret@db:port/ops": "invalid port",
		"postgres:/bob:s3cret@db/ops":       "a PostgreSQL URL starts postgres://",
		"PostgreSQL:bob:s3cret@db":          "a PostgreSQL URL starts PostgreSQL://",
	} {
		err := postgres.Check(dsn)
		switch {
		case err == nil:
			t.Errorf("Check(%q) = nil, want an error", dsn)
		case !errors.Is(err, postgres.ErrBadDSN):
			t.Errorf("Check(%q) = %v, not ErrBadDSN", dsn, err)
		case !strings.Contains(err.Error(), want):
			t.Errorf("Check(%q) = %v, want %q in it", dsn, err, want)
		case strings.Contains(err.Error(), "s3c") || strings.Contains(err.Error(), "ret@"):
			t.Errorf("Check(%q) = %v: the password shows", dsn, err)
		}
	}
}
