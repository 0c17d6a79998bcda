package main

// What the command line of the pipeline gets back before anything runs: --version, the one line
// for a flag the flag package cannot parse, and the exit code of a command line that is wrong.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// version is the program's version, set at build time by the Makefile
// (-ldflags "-X main.version=..."); when it is empty, Version reads the build information.
var version string

// Version returns the program's version: the one set at build time, else the module version or
// the VCS revision (with "-dirty" for a modified tree) that the Go toolchain recorded, else
// "devel"; then the Go version and the Beam Go SDK's, in parentheses.
func Version() string {
	v := version
	beamVersion := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		var rev string
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if v == "" && rev != "" {
			v = rev[:min(12, len(rev))]
			if dirty {
				v += "-dirty"
			}
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/apache/beam/sdks/v2" {
				beamVersion = d.Version
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	return fmt.Sprintf("%s (%s, Beam Go SDK %s)", v, runtime.Version(), beamVersion)
}

// wantsVersion reports whether the command line asks for the version: --version or -version
// among the flags (before a "--").
func wantsVersion(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--version", "-version", "--version=true", "-version=true":
			return true
		}
	}
	return false
}

// argError is an error of the command line itself (a flag's value, a template parameter that
// breaks its rule, flags that do not go together): nothing was started, and the program exits
// exitUsage (2), as for a misspelt flag. Any other error of a run exits exitFailed (1).
type argError struct{ error }

func (e argError) Unwrap() error { return e.error }

// badArgs marks err as an error of the command line.
func badArgs(err error) error { return argError{err} }

// exitCode is the exit code of a run that ended with err: exitUsage for an error of the command
// line, exitFailed for any other.
func exitCode(err error) int {
	if errors.As(err, new(argError)) {
		return exitUsage
	}
	return exitFailed
}

// parseMainFlags parses args into fs (flag.CommandLine, with the template parameters and Beam's
// flags). On -h or --help it prints the help to stdout and returns flag.ErrHelp; on a value that
// a flag does not take it returns one line naming the flag, the value and the rule, without the
// usage the flag package would print after it (hundreds of lines, which hid the error).
func parseMainFlags(fs *flag.FlagSet, args []string) error {
	fs.Init(fs.Name(), flag.ContinueOnError)
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(os.Stdout, fs)
		return err
	case err != nil:
		return fmt.Errorf("%s (--help lists the flags)", flagProblem(fs, err))
	}
	return nil
}

// flagValueError matches the flag package's error for a value that a flag's Set refused.
var flagValueError = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)

// flagProblem rewrites the flag package's parse error of fs as --name "value": rule (the value
// hidden for a secret flag). The flag package's own Set of a bool, an integer or a duration
// says only "parse error": the rule is then said by the flag's kind.
func flagProblem(fs *flag.FlagSet, err error) string {
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	value, name, rule := m[1], m[2], m[3]
	if isSecretName(name) {
		value = secret.Mask
	}
	if strings.HasPrefix(rule, "parse error") || strings.HasPrefix(rule, "value out of range") {
		rule = "not a value of this flag"
		if f := fs.Lookup(name); f != nil {
			switch g, _ := f.Value.(flag.Getter); {
			case isBool(fs, name):
				rule = "not true or false"
			case g == nil:
			default:
				switch g.Get().(type) {
				case time.Duration:
					rule = "not a duration: a number with its unit, such as 30s, 10m or 1h"
				case int, int64, uint, uint64:
					rule = "not a whole number, or out of range"
				case float64:
					rule = "not a number"
				}
			}
		}
	}
	return fmt.Sprintf("--%s %q: %s", name, value, rule)
}
