package main

// The subcommands: check, publish, replay and infer (one file each, cmd_*.go), and help. main runs one
// when the first argument names it; the Flex Template launcher passes only flags, so a launch
// never takes this path.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// Exit codes of the subcommands (each command's documentation adds its own meaning of 1).
const (
	exitOK     = 0
	exitFailed = 1 // the command ran and found a problem, or could not finish (the error says which)
	exitUsage  = 2 // a flag, an argument or an input file is wrong: nothing was done
)

// subcommand is one subcommand of the binary.
type subcommand struct {
	name    string // as given on the command line
	args    string // what follows the name, for the usage line
	summary string // one line, for --help
	// run runs the command with its arguments (after the name) and returns the exit code.
	run func(ctx context.Context, io *cmdIO, args []string) int
}

// commands are the subcommands, in the order --help lists them. Filled in init: help's run
// reads the table.
var commands []subcommand

func init() {
	commands = []subcommand{
		{"check", "[flags] FILE...", "print the row each message becomes, or its dead-letter error (nothing is inserted)", runCheck},
		{"publish", "[flags] FILE", "publish a file of JSON lines to a Pub/Sub topic", runPublish},
		{"replay", "[flags]", "publish dead letters again to the input topic, from the dead-letter table or topic", runReplay},
		{"infer", "[flags] FILE...", "print the CREATE TABLE that a sample of messages gives by the column-type rule, or run it (--execute)", runInfer},
		{"help", "[COMMAND]", "this help, or a command's flags", runHelp},
	}
}

// lookupCommand returns the subcommand named name.
func lookupCommand(name string) (subcommand, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return subcommand{}, false
}

// count writes n and noun, the noun in the plural unless n is 1: "1 message", "2 messages". noun's
// plural is noun+"s", or plural when given.
func count(n int, noun string, plural ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(plural) > 0 {
		return fmt.Sprintf("%d %s", n, plural[0])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// commandNames lists the subcommands' names, for messages: "check, publish, replay and help".
func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// cmdIO is where a command reads and writes. Out and Err hide the secrets added with hide.
type cmdIO struct {
	In       io.Reader
	Out, Err *redactor
	tty      bool // Err is a terminal: progress updates a line in place
}

func newCmdIO(in io.Reader, out, errw io.Writer) *cmdIO {
	return &cmdIO{In: in, Out: &redactor{w: out}, Err: &redactor{w: errw}}
}

// hide makes Out and Err write secret.Mask in place of each of the secrets (secret.String.Hide:
// the empty string and a Secret Manager secret version's name, which is no secret, hide
// nothing).
func (c *cmdIO) hide(secrets ...secret.String) {
	c.Out.secrets = append(c.Out.secrets, secrets...)
	c.Err.secrets = append(c.Err.secrets, secrets...)
}

// redactor is an io.Writer that replaces each secret in what is written by secret.Mask. The
// commands write whole lines, so a secret is never split across two writes.
type redactor struct {
	w       io.Writer
	secrets []secret.String
}

func (r *redactor) Write(p []byte) (int, error) {
	if len(r.secrets) == 0 {
		return r.w.Write(p)
	}
	s := string(p)
	for _, sec := range r.secrets {
		s = sec.Hide(s)
	}
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// runCommand runs the subcommand c with args, on the process's standard streams. An interrupt
// (Ctrl-C, SIGINT) or a SIGTERM cancels the command's context: the command stops what it is
// doing, gives back the messages it pulled and says what it did, and the process then exits with
// status 130 or 143, as a shell reports a process ended by the signal. A second signal ends the
// process at once.
func runCommand(ctx context.Context, c subcommand, args []string) int {
	cio := newCmdIO(os.Stdin, os.Stdout, os.Stderr)
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		cio.tty = true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	caught := make(chan os.Signal, 1)
	go func() {
		select {
		case sig := <-signals:
			signal.Stop(signals) // a second one ends the process as it would without this
			fmt.Fprintf(cio.Err, "pubsub-to-clickhouse %s: interrupted (%s): stopping (a second interrupt ends it at once)\n", c.name, sig)
			caught <- sig
			cancel()
		case <-ctx.Done():
		}
	}()
	code := c.run(ctx, cio, args)
	signal.Stop(signals)
	select {
	case sig := <-caught:
		if sig == syscall.SIGTERM {
			return 143
		}
		return 130
	default:
		return code
	}
}

// runHelp prints the program's help, or a command's.
func runHelp(_ context.Context, cio *cmdIO, args []string) int {
	if len(args) == 0 {
		var o pipeline.Options
		pipeline.RegisterFlags(flag.CommandLine, &o) // beside the runner's flags, defined at init
		printHelp(cio.Out, flag.CommandLine)
		return exitOK
	}
	c, ok := lookupCommand(args[0])
	if !ok || c.name == "help" {
		fmt.Fprintf(cio.Err, "pubsub-to-clickhouse help: %q is not a command (the commands: check, publish, replay, infer)\n", args[0])
		return exitUsage
	}
	return c.run(context.Background(), cio, []string{"--help"})
}

// newCommandFlags returns the flag set of command name, whose usage (for --help and after a
// wrong flag) is the synopsis, the description and the flags.
func newCommandFlags(cio *cmdIO, name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(cio.Err)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: pubsub-to-clickhouse %s %s\n\n", name, synopsis)
		for _, l := range wrap(description, helpWidth) {
			fmt.Fprintln(w, l)
		}
		fmt.Fprintf(w, "\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			def := f.DefValue
			if def == "false" || def == "0" {
				def = ""
			}
			printFlag(w, f, def)
		})
	}
	return fs
}

// given reports whether the flag name of fs was given on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// errHelp is parseCommandArgs's error after --help: the usage is printed, and the command exits
// 0.
var errHelp = errors.New("help requested")

// parseCommandArgs parses args with fs, flags and positional arguments in any order ("--" ends
// the flags), and returns the positional arguments. On --help it prints the usage to Out and
// returns errHelp; on a wrong flag the flag package has printed the problem and the usage.
func parseCommandArgs(cio *cmdIO, fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	// The flag package prints the whole usage on --help and after a parse error; here the usage
	// goes once, to stdout, on --help, and a parse error is followed by one line that says where
	// the flags are listed.
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard) // the problem is said below, in words of its own
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	// --clickHousePassword= PW: the value split off by a space would be named in an error (a file
	// that does not exist, an unknown flag).
	for i := 0; i+1 < len(args) && args[i] != "--"; i++ {
		if problem := splitOffSecret(fs, args[i], args[i+1]); problem != "" {
			fmt.Fprintf(cio.Err, "pubsub-to-clickhouse %s: %s\n", fs.Name(), problem)
			return nil, errors.New(problem)
		}
	}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(cio.Out)
			usage()
			return nil, errHelp
		}
		if err != nil {
			fmt.Fprintf(cio.Err, "pubsub-to-clickhouse %s: %s\n(pubsub-to-clickhouse help %[1]s lists the flags)\n", fs.Name(), commandFlagProblem(fs, err))
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" { // Parse stopped at "--", which it drops
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// splitOffSecret returns the problem of arg when it is a secret flag or a key's or certificate's
// given empty, as --clickHousePassword=, and next, the argument after it, is likely its value
// split off by a space: a flag fs does not define, or an argument that is no file or directory
// (nor -, standard input). next would then be named in an error. "" otherwise (an empty password
// given on purpose, then a flag or a file). The problem does not show next.
func splitOffSecret(fs *flag.FlagSet, arg, next string) string {
	name, value, hasValue, ok := splitFlag(arg)
	if !ok || !hasValue || value != "" || !isSecretName(name) && !holdsKeyOrCertificate(name) || next == "-" || next == "--" {
		return ""
	}
	if strings.HasPrefix(next, "-") {
		if flagName, _, _ := strings.Cut(strings.TrimLeft(next, "-"), "="); fs.Lookup(flagName) == nil {
			return splitOffProblem(name, "an unknown flag")
		}
		return ""
	}
	if _, err := os.Stat(next); err == nil {
		return ""
	}
	return splitOffProblem(name, "neither a flag nor a file")
}

// splitOffProblem says that the empty secret flag name is followed by what is (not shown).
func splitOffProblem(name, what string) string {
	return fmt.Sprintf("--%s= is empty, and the argument after it is %s (not shown: it may be the value, split off by a space); "+
		"give it as --%[1]s=VALUE, or put -- before the arguments that are files", name, what)
}

// commandFlagProblem is the problem of a subcommand's flags in words: a flag fs does not define
// gets the flag it resembles (nearParam's rule over fs's flags), or is said to be a parameter of
// the pipeline that the command does not take; a value a flag refuses is flagProblem's.
func commandFlagProblem(fs *flag.FlagSet, err error) string {
	name, undefined := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !undefined {
		return flagProblem(fs, err)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if near := nearParam(name, names); near != "" {
		return fmt.Sprintf("flag --%s is not defined: did you mean --%s? (names are case-sensitive)", name, near)
	}
	if slices.Contains(templateParams(), name) {
		return fmt.Sprintf("flag --%s is a parameter of the pipeline, which %s does not take", name, fs.Name())
	}
	return fmt.Sprintf("flag --%s is not defined", name)
}

// usageError prints a usage error of command name and returns exitUsage.
func usageError(cio *cmdIO, name string, err error) int {
	fmt.Fprintf(cio.Err, "pubsub-to-clickhouse %s: %v\n(pubsub-to-clickhouse help %s lists the flags)\n", name, err, name)
	return exitUsage
}

// failure prints the error of command name and returns exitFailed.
func failure(cio *cmdIO, name string, err error) int {
	fmt.Fprintf(cio.Err, "pubsub-to-clickhouse %s: %v\n", name, err)
	return exitFailed
}

// parseCommand parses the command line of command name into fs and checks the template
// parameters names in o by their rules. It returns the positional arguments, or the exit code
// (done true) after --help or a usage error. The passwords given, and the other secrets of
// clickHouseUrl (chclient.Config.TextSecrets), are hidden from cio from then on.
func parseCommand(cio *cmdIO, name string, fs *flag.FlagSet, args []string, o *pipeline.Options, params []string) (positional []string, code int, done bool) {
	positional, err := parseCommandArgs(cio, fs, args)
	cio.hide(o.ClickHousePassword)
	if opts, err := o.ClickHouse().Options(); err == nil {
		cio.hide(secret.String(opts.Auth.Password)) // a password in clickHouseUrl
	}
	// And every other secret of clickHouseUrl (an option named as one, ?token=, which the HTTP
	// transport's errors quote in the request's URL), as the pipeline's log hides them.
	for _, s := range o.ClickHouse().TextSecrets() {
		cio.hide(secret.String(s))
	}
	switch {
	case errors.Is(err, errHelp):
		return nil, exitOK, true
	case err != nil:
		return nil, exitUsage, true // the flag package has said what is wrong
	}
	if err := o.ValidateOf(params...); err != nil {
		return nil, usageError(cio, name, fmt.Errorf("invalid parameters:\n%w", err)), true
	}
	return positional, 0, false
}
