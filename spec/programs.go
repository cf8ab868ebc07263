package spec

// program is what the rules know of a program: how it reads its options,
// which of its arguments it runs as code, and the command it runs if it
// is a wrapper.
type program struct {
	opts
	code   []string    // options whose value is code (sed -e, psql -c)
	args   operandKind // what its operands are
	fixed  int         // operands before those (timeout's duration, sqlite3's database)
	exec   []string    // options that make its operands a command to run (watch -x)
	plus   bool        // an operand that begins with + is a command (vi +cmd, less +cmd)
	what   string      // what its code is, for messages
	fix    string      // how to pass a value instead
	gives  []string    // options that give the program, so that no operand is (python -c, sed -e, awk -f)
	assign bool        // operands NAME=VALUE before the command are assignments (env, sudo)
	plain  bool        // parses no options that matter (echo)
}

// operandKind is what a program's operands are.
type operandKind uint8

const (
	data      operandKind = iota // files, names, targets
	command                      // a program and its arguments, run directly
	allCode                      // each is code: a shell command line, a SQL statement, a tmux command
	firstCode                    // the first is code (a script, a filter), unless an option gave it
)

// Fixes proposed in messages; {NAME} and {SRC} stand for an environment
// variable's name and the placeholder.
const (
	fixEnv     = "pass the value through env, env: {{NAME}: {SRC}}, and read it from the environment there"
	fixProgram = "write the program out (one tool per program, or a fixed script that picks among them from a value in env)"
	fixFixed   = "write it out: a value there is code, whatever the input schema allows"
	fixSed     = "a sed script cannot take a value as data: pass it through env, env: {{NAME}: {SRC}}, and use awk with ENVIRON[\"{NAME}\"]"
	fixJq      = "pass it as a variable, --arg name {SRC} (or --arg name \"$NAME\" in a script), and write $name in the filter"
	fixSQL     = "write the statement out and pass the value as data: psql -v name={SRC} with :'name' in the SQL, or a client that binds parameters"
	fixMake    = "pass the value through env, env: {{NAME}: {SRC}}, and read it in the recipe as \"$${NAME}\" (make expands $(...) in a variable's value)"
)

// unknown is how the rules read a program they do not know: options
// anywhere before --, operands data.
var unknown = program{}

// Shared descriptions.
var (
	vi = &program{
		opts: opts{values: "cSuUiTtqwW", long: []string{"--cmd", "--remote-send", "--remote-expr", "--servername"}},
		code: []string{"-c", "--cmd", "-S", "-u", "-U", "--remote-send", "--remote-expr"}, plus: true,
		what: "a command of vi (-c, --cmd, +cmd, -S, -u)", fix: fixFixed,
	}
	sqlite = &program{
		opts: opts{single: true, long: []string{"-cmd", "-init", "-separator", "-newline", "-nullvalue", "-vfs", "-mmap", "-maxsize", "-pagecache", "-lookaside", "-heap", "-A", "-c", "-s"}},
		code: []string{"-cmd", "-init", "-c", "-s"}, args: allCode, fixed: 1,
		what: "an SQL statement or dot-command (.shell, .system) of sqlite3", fix: fixSQL,
	}
	python = &program{opts: opts{values: "cmWXQ", stop: []string{"-c", "-m"}, posix: true}, code: []string{"-c", "-m"}, gives: []string{"-c", "-m"},
		args: firstCode, what: "python's program (-c, -m or the script)", fix: fixEnv}
)

// interpreter describes a language interpreter: the options whose value
// is code (of which gives hold the program), and the script, its first
// operand otherwise. Its options end at the script.
func interpreter(values string, code, gives []string, what string) *program {
	return &program{opts: opts{values: values, posix: true}, code: code, gives: gives, args: firstCode, what: what, fix: fixEnv}
}

// wrapper describes a program that runs a command: its operands, after
// fixed ones, are a program and its arguments.
func wrapper(o opts, fixed int) *program {
	o.posix = true
	return &program{opts: o, args: command, fixed: fixed}
}

// programs are the programs the rules know by name. Interpreters with a
// version in their name (python3.12, perl5.36) are found by lookup.
var programs = map[string]*program{
	// Interpreters: the program text, module or script is code; their
	// options end at it.
	"python":     python,
	"pypy":       python,
	"perl":       interpreter("eEMmI", []string{"-e", "-E", "-M", "-m"}, []string{"-e", "-E"}, "perl's program (-e, -E, -M or the script)"),
	"ruby":       interpreter("eIrC", []string{"-e", "-r"}, []string{"-e"}, "ruby's program (-e, -r or the script)"),
	"lua":        interpreter("el", []string{"-e", "-l"}, nil, "lua's program (-e, -l or the script)"),
	"php":        interpreter("rdfcBRFE", []string{"-r", "-d", "-f", "-c", "-B", "-R", "-F", "-E"}, []string{"-r", "-f", "-R", "-F"}, "php's program (-r, -d, -f or the script)"),
	"node":       nodeLike,
	"nodejs":     nodeLike,
	"bun":        nodeLike,
	"deno":       &program{opts: opts{posix: true}, args: allCode, what: "deno's command and program", fix: fixEnv},
	"Rscript":    interpreter("e", []string{"-e"}, []string{"-e"}, "Rscript's program (-e or the script)"),
	"osascript":  interpreter("e", []string{"-e"}, []string{"-e"}, "osascript's program (-e or the script)"),
	"tclsh":      interpreter("", nil, nil, "tclsh's script"),
	"wish":       interpreter("", nil, nil, "wish's script"),
	"expect":     interpreter("cf", []string{"-c", "-f"}, []string{"-f"}, "expect's program (-c, -f or the script)"),
	"julia":      interpreter("eEL", []string{"-e", "-E", "-L", "--eval", "--print", "--load"}, []string{"-e", "-E", "--eval", "--print"}, "julia's program (-e, -E, -L or the script)"),
	"octave":     &program{opts: opts{long: []string{"--eval"}, posix: true}, code: []string{"--eval"}, gives: []string{"--eval"}, args: firstCode, what: "octave's program", fix: fixEnv},
	"gnuplot":    &program{opts: opts{values: "e"}, code: []string{"-e"}, args: allCode, what: "gnuplot's commands (-e or a script)", fix: fixEnv},
	"pwsh":       powershell,
	"powershell": powershell,
	"dc":         &program{opts: opts{values: "ef", long: []string{"--expression", "--file"}}, code: []string{"-e", "--expression", "-f", "--file"}, args: allCode, what: "dc's program (dc's ! runs commands)", fix: fixEnv},
	"m4":         &program{opts: opts{values: "DIUs", long: []string{"--define"}}, code: []string{"-D", "--define"}, args: allCode, what: "m4's input (syscmd runs commands)", fix: fixEnv},

	// Text tools whose script is a program.
	"sed":  &program{opts: opts{values: "efl", optional: "i", long: []string{"--expression", "--file", "--line-length"}}, code: []string{"-e", "--expression", "-f", "--file"}, gives: []string{"-e", "--expression", "-f", "--file"}, args: firstCode, what: "the script of sed (GNU sed's e command and s///e run commands, w writes files)", fix: fixSed},
	"awk":  awkLike,
	"gawk": awkLike,
	"mawk": awkLike,
	"nawk": awkLike,
	"jq":   &program{opts: opts{values: "fL", long: []string{"--from-file", "--indent"}, long2: []string{"--arg", "--argjson", "--slurpfile", "--rawfile"}}, code: []string{"-f", "--from-file", "-L"}, gives: []string{"-f", "--from-file"}, args: firstCode, what: "jq's filter (it reads files and the environment)", fix: fixJq},
	"yq":   &program{opts: opts{values: "fIpo", long: []string{"--front-matter", "--indent", "--input-format", "--output-format"}, long2: []string{"--arg", "--argjson"}}, args: firstCode, what: "yq's expression (it reads files and the environment)", fix: fixJq},

	// Programs that hand a command line to a shell.
	"script":    &program{opts: opts{values: "cEIOTBo", long: []string{"--command", "--echo", "--log-in", "--log-out", "--log-timing", "--log-io", "--output-limit"}}, code: []string{"-c", "--command"}, what: "the command of script -c (run by a shell)", fix: fixEnv},
	"watch":     &program{opts: opts{values: "nq", optional: "d", long: []string{"--interval", "--equexit"}, posix: true}, args: allCode, exec: []string{"-x", "--exec"}, what: "the command of watch (run by a shell unless -x)", fix: fixEnv},
	"tmux":      &program{opts: opts{values: "cfLST", posix: true}, code: []string{"-c"}, args: allCode, what: "a tmux command or shell command", fix: fixFixed},
	"screen":    &program{opts: opts{values: "cehpsSTtX", posix: true}, code: []string{"-s", "-X", "-c"}, args: allCode, what: "a screen command or the program it runs", fix: fixFixed},
	"parallel":  &program{opts: opts{values: "jSadIEnNLlP", long: []string{"--jobs", "--sshlogin", "--arg-file", "--delimiter", "--joblog", "--results", "--tmpdir", "--timeout", "--delay", "--colsep", "--env", "--halt", "--memfree", "--load", "--basefile", "--workdir", "--retries", "--tagstring", "--ssh", "--max-args"}, posix: true}, code: []string{"--ssh"}, what: "the command of parallel (run by a shell)", fix: fixEnv},
	"sg":        &program{opts: opts{posix: true}, args: allCode, fixed: 1, what: "the command of sg (run by a shell)", fix: fixEnv},
	"nix-shell": &program{opts: opts{values: "pAIE", long: []string{"--run", "--command", "--packages", "--attr", "--arg", "--argstr", "--expr"}}, code: []string{"--run", "--command", "-E", "--expr", "-p", "--packages"}, what: "the command or expression of nix-shell", fix: fixEnv},
	"su":        suLike,
	"runuser":   suLike,
	"flock":     &program{opts: opts{values: "wE", long: []string{"--timeout", "--conflict-exit-code"}, posix: true}, what: "the command of flock -c (run by a shell)", fix: fixEnv},

	// Wrappers: their first operand (after fixed ones) is a program, run
	// with the rest as its arguments.
	"sudo":           &program{opts: opts{values: "ugCDprtTUR", long: []string{"--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type", "--command-timeout", "--other-user", "--chroot"}, posix: true}, args: command, assign: true},
	"doas":           wrapper(opts{values: "uCa"}, 0),
	"pkexec":         wrapper(opts{long: []string{"--user"}}, 0),
	"timeout":        wrapper(opts{values: "sk", long: []string{"--signal", "--kill-after"}}, 1),
	"nice":           wrapper(opts{values: "n", long: []string{"--adjustment"}}, 0),
	"nohup":          wrapper(opts{}, 0),
	"stdbuf":         wrapper(opts{values: "ioe", long: []string{"--input", "--output", "--error"}}, 0),
	"setsid":         wrapper(opts{}, 0),
	"chroot":         &program{opts: opts{long: []string{"--userspec", "--groups"}, posix: true}, args: command, fixed: 1},
	"ionice":         wrapper(opts{values: "cnp", long: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}}, 0),
	"taskset":        wrapper(opts{}, 1),
	"chrt":           wrapper(opts{values: "T", long: []string{"--sched-runtime", "--sched-period", "--sched-deadline"}}, 1),
	"unshare":        wrapper(opts{values: "SGRwl", long: []string{"--setuid", "--setgid", "--root", "--wd", "--setgroups", "--map-user", "--map-group", "--propagation", "--load-interp"}}, 0),
	"nsenter":        wrapper(opts{values: "tSG", long: []string{"--target", "--setuid", "--setgid"}}, 0),
	"strace":         wrapper(opts{values: "oepsuaEIOPSX", long: []string{"--output", "--expr", "--attach", "--string-limit", "--user", "--env"}}, 0),
	"ltrace":         &program{opts: opts{values: "oepsuaADFlnx", long: []string{"--output", "--library"}, posix: true}, code: []string{"-l", "--library"}, args: command, what: "a library ltrace loads", fix: fixFixed},
	"time":           wrapper(opts{values: "fo", long: []string{"--format", "--output"}}, 0),
	"xargs":          wrapper(opts{values: "adEILnPs", optional: "eil", long: []string{"--arg-file", "--delimiter", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}}, 0),
	"env":            &program{opts: opts{values: "uCSP", long: []string{"--unset", "--chdir", "--split-string"}, posix: true}, code: []string{"-S", "--split-string"}, args: command, assign: true, what: "the command env -S splits", fix: fixEnv},
	"busybox":        wrapper(opts{}, 0),
	"systemd-run":    &program{opts: opts{values: "upMHE", long: []string{"--unit", "--property", "--machine", "--host", "--description", "--slice", "--setenv", "--working-directory", "--uid", "--gid", "--nice", "--on-active", "--on-calendar", "--timer-property"}, posix: true}, code: []string{"-p", "--property", "--timer-property"}, args: command, what: "a unit property of systemd-run (ExecStartPre= runs a command)", fix: fixFixed},
	"prlimit":        wrapper(opts{values: "p", long: []string{"--pid"}}, 0),
	"setpriv":        wrapper(opts{long: []string{"--reuid", "--regid", "--groups", "--inh-caps", "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile"}}, 0),
	"numactl":        wrapper(opts{values: "NmCipP", long: []string{"--cpunodebind", "--membind", "--physcpubind", "--interleave", "--preferred"}}, 0),
	"firejail":       wrapper(opts{}, 0),
	"valgrind":       wrapper(opts{}, 0),
	"sshpass":        wrapper(opts{values: "pfdP"}, 0),
	"caffeinate":     wrapper(opts{values: "tw"}, 0),
	"find":           &program{opts: opts{single: true}},
	"kubectl":        &program{opts: opts{values: "ncflos", long: []string{"--namespace", "--container", "--context", "--kubeconfig", "--cluster", "--user", "--image", "--overrides", "--output", "--selector", "--filename", "--timeout", "--pod-running-timeout", "--server", "--token"}}},
	"docker-compose": composeLike,
	"gdb":            &program{opts: opts{single: true, long: []string{"-ex", "-eval-command", "-iex", "-init-eval-command", "-x", "-command", "-ix", "-init-command", "-p", "-pid", "-cd", "-d", "-directory", "-s", "-symbols", "-e", "-exec", "-se", "-c", "-core", "-data-directory", "-D"}}, code: []string{"-ex", "-eval-command", "-iex", "-init-eval-command", "-x", "-command", "-ix", "-init-command", "-e", "-exec", "-se"}, args: firstCode, what: "a gdb command or the program gdb runs", fix: fixFixed},
	"lldb":           &program{opts: opts{values: "oOsSkKf", long: []string{"--one-line", "--one-line-before-file", "--source", "--source-before-file", "--file"}}, code: []string{"-o", "-O", "-s", "-S", "-k", "-K", "--one-line", "--one-line-before-file", "--source", "--source-before-file", "-f", "--file"}, args: firstCode, what: "an lldb command or the program lldb runs", fix: fixFixed},

	// Editors and pagers: commands in arguments.
	"vi":      vi,
	"vim":     vi,
	"nvim":    vi,
	"view":    vi,
	"ex":      vi,
	"rvim":    vi,
	"gvim":    vi,
	"vimdiff": vi,
	"emacs":   &program{opts: opts{values: "lfLdt", long: []string{"--eval", "-eval", "--execute", "--load", "--funcall", "--script", "--chdir", "--directory", "--init-directory"}}, code: []string{"--eval", "-eval", "--execute", "-l", "--load", "-f", "--funcall", "--script", "-L", "--directory"}, what: "emacs lisp (--eval, -l, -f, --script)", fix: fixFixed},
	"nano":    &program{opts: opts{values: "sfYoT", long: []string{"--speller", "--rcfile", "--syntax", "--operatingdir", "--tabsize"}}, code: []string{"-s", "--speller", "-f", "--rcfile"}, what: "the speller or rcfile of nano", fix: fixFixed},
	"less":    &program{opts: opts{values: "bhjkoOpPtTxyz#D", long: []string{"--lesskey-file", "--lesskey-src", "--log-file", "--LOG-FILE", "--pattern", "--prompt", "--tag", "--tag-file"}}, code: []string{"-k", "--lesskey-file", "--lesskey-src"}, plus: true, what: "a less command (+cmd) or key file", fix: fixFixed},
	"man":     &program{opts: opts{values: "PMpCLmSe", optional: "H", long: []string{"--pager", "--html", "--manpath", "--preprocessor", "--config-file"}}, code: []string{"-P", "--pager", "-H", "--html", "-p", "--preprocessor"}, what: "the pager, browser or preprocessor man runs", fix: fixFixed},

	// Database shells: statements in arguments.
	"psql":              &program{opts: opts{values: "cdfhLopPTURFvU", long: []string{"--command", "--dbname", "--file", "--host", "--log-file", "--output", "--port", "--pset", "--table-attr", "--username", "--record-separator", "--field-separator", "--set", "--variable"}}, code: []string{"-c", "--command", "-f", "--file"}, what: "a psql command or SQL (-c, -f)", fix: fixSQL},
	"mysql":             mysqlLike,
	"mariadb":           mysqlLike,
	"sqlite3":           sqlite,
	"duckdb":            sqlite,
	"redis-cli":         &program{opts: opts{values: "hpsaunrid", long: []string{"--user", "--pass", "--eval", "--tls-cert", "--tls-key", "--cacert", "--sni"}, posix: true}, code: []string{"--eval"}, args: allCode, what: "a redis command (EVAL runs Lua; CONFIG SET writes files)", fix: fixFixed},
	"mongo":             mongoLike,
	"mongosh":           mongoLike,
	"clickhouse-client": &program{opts: opts{values: "qhudp", long: []string{"--query", "--queries-file", "--host", "--user", "--database", "--password", "--port"}}, code: []string{"-q", "--query", "--queries-file"}, what: "a clickhouse query", fix: fixSQL},
	"cqlsh":             &program{opts: opts{values: "efuk", long: []string{"--execute", "--file", "--username", "--keyspace"}}, code: []string{"-e", "--execute", "-f", "--file"}, what: "a CQL statement of cqlsh", fix: fixSQL},

	// Remote shells and copies: options that name a command.
	"ssh":   &program{opts: opts{values: "BbcDEeFIiJLlmOoPpQRSWw", posix: true}, code: []string{"-o", "-F", "-I"}, what: "an ssh option (-o ProxyCommand=, -F, -I)", fix: fixFixed},
	"scp":   &program{opts: opts{values: "cDFiJloPS"}, code: []string{"-o", "-F", "-S", "-D"}, what: "an scp option (-o ProxyCommand=, -F, -S)", fix: fixFixed},
	"sftp":  &program{opts: opts{values: "BbcDFiJloPRsS"}, code: []string{"-o", "-F", "-S", "-D", "-b", "-s"}, what: "an sftp option or batch file (-o, -F, -S, -b)", fix: fixFixed},
	"rsync": &program{opts: opts{values: "eMfTB", long: []string{"--rsh", "--rsync-path", "--remote-option", "--filter", "--exclude", "--include", "--files-from", "--temp-dir", "--log-file", "--password-file", "--chown", "--chmod", "--backup-dir", "--suffix", "--port", "--timeout", "--bwlimit", "--max-size", "--min-size", "--compare-dest", "--copy-dest", "--link-dest"}}, code: []string{"-e", "--rsh", "--rsync-path", "-M", "--remote-option"}, what: "the remote shell or remote rsync command of rsync", fix: fixFixed},
	"wget":  &program{opts: opts{values: "eoOaiPTtUQBYlw", long: []string{"--execute", "--use-askpass", "--output-file", "--output-document", "--directory-prefix", "--input-file"}}, code: []string{"-e", "--execute", "--use-askpass"}, what: "a wgetrc command or askpass program of wget", fix: fixFixed},

	// Archivers: options that run a program.
	"tar": &program{opts: opts{values: "fCTXbHIKLNVgF", long: []string{"--to-command", "--checkpoint-action", "--use-compress-program", "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command", "--file", "--directory", "--files-from", "--exclude-from", "--format"}}, code: []string{"--to-command", "--checkpoint-action", "-I", "--use-compress-program", "-F", "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command"}, what: "a command tar runs (--to-command, --checkpoint-action, -I, -F)", fix: fixFixed},
	"zip": &program{opts: opts{values: "bntOPZsx", long: []string{"-TT", "--unzip-command"}}, code: []string{"-TT", "--unzip-command"}, what: "the unzip command of zip -TT", fix: fixFixed},

	// Build tools and version control.
	"make":    makeLike,
	"gmake":   makeLike,
	"git":     &program{opts: opts{values: "Cc", long: []string{"--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--exec-path", "--list-cmds"}, posix: true}, code: []string{"-c", "--config-env", "--exec-path"}, what: "git configuration (-c, --config-env: core.sshCommand, alias.x=!cmd ...)", fix: fixFixed},
	"hg":      &program{opts: opts{values: "R", long: []string{"--config", "--repository", "--cwd"}}, code: []string{"--config"}, what: "hg configuration (--config)", fix: fixFixed},
	"docker":  containerLike,
	"podman":  containerLike,
	"nerdctl": containerLike,
	"echo":    &program{plain: true},
	"printf":  &program{opts: opts{posix: true}},
}

// More descriptions shared by several names.
var (
	nodeLike = &program{opts: opts{values: "eprC", long: []string{"--eval", "--print", "--require", "--import", "--loader", "--experimental-loader", "--conditions"}, posix: true},
		code: []string{"-e", "--eval", "-p", "--print", "-r", "--require", "--import", "--loader", "--experimental-loader"}, args: firstCode, what: "node's program (-e, -p, -r or the script)", fix: fixEnv}
	powershell = &program{opts: opts{single: true, long: []string{"-Command", "-c", "-EncodedCommand", "-ec", "-File", "-f"}, posix: true},
		code: []string{"-Command", "-c", "-EncodedCommand", "-ec", "-File", "-f"}, args: allCode, what: "a PowerShell command", fix: fixEnv}
	awkLike = &program{opts: opts{values: "fvFeilE", long: []string{"--file", "--source", "--include", "--load", "--exec", "--assign", "--field-separator"}, posix: true},
		code: []string{"-e", "--source", "-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"}, gives: []string{"-e", "--source", "-f", "--file", "-E", "--exec"}, args: firstCode, what: "awk's program (system() and | run commands)", fix: fixEnv}
	suLike = &program{opts: opts{values: "csgGwu", long: []string{"--command", "--shell", "--group", "--supp-group", "--whitelist-environment", "--user"}},
		code: []string{"-c", "--command", "-s", "--shell"}, exec: []string{"-u", "--user"}, what: "su's command (-c) or shell (-s)", fix: fixEnv}
	mysqlLike = &program{opts: opts{values: "ehuPDS", optional: "p", long: []string{"--execute", "--init-command", "--host", "--user", "--port", "--database", "--socket", "--defaults-file", "--defaults-extra-file", "--plugin-dir", "--default-auth"}},
		code: []string{"-e", "--execute", "--init-command", "--defaults-file", "--defaults-extra-file", "--plugin-dir", "--default-auth"}, what: "a mysql statement (-e, --init-command)", fix: fixSQL}
	mongoLike = &program{opts: opts{values: "fuph", long: []string{"--eval", "--file", "--username", "--password", "--host", "--port", "--authenticationDatabase"}},
		code: []string{"--eval", "-f", "--file"}, args: allCode, fixed: 1, what: "mongo's JavaScript (--eval, -f, a script)", fix: fixEnv}
	makeLike = &program{opts: opts{values: "CfIoWE", optional: "jl", long: []string{"--directory", "--file", "--makefile", "--include-dir", "--old-file", "--what-if", "--new-file", "--assume-new", "--assume-old", "--eval"}},
		code: []string{"-E", "--eval", "-f", "--file", "--makefile"}, what: "make code (--eval, -f, a variable assignment, whose $(shell ...) make runs)", fix: fixMake}
	composeLike = &program{opts: opts{values: "fp", long: []string{"--file", "--project-name", "--profile", "--env-file", "--project-directory"}, posix: true},
		what: "the command docker compose runs", fix: fixFixed}
	containerLike = &program{opts: opts{values: "cHl", long: []string{"--config", "--context", "--host", "--log-level", "--tlscacert", "--tlscert", "--tlskey"}, posix: true},
		code: []string{"--config"}, what: "the configuration directory of docker", fix: fixFixed}
)
