package main

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// aliases maps the names that other SDKs' launchers and users pass (the Java SDK's
// DataflowPipelineOptions in camelCase, the Python SDK's in snake_case) to the Go SDK's flag of
// the same meaning. A camelCase name whose snake_case form is a Go flag (stagingLocation,
// tempLocation, maxNumWorkers, workerMachineType, ...) needs no entry: normalizeArgs tries that
// form first.
var aliases = map[string]string{
	"serviceAccount":         "service_account_email",
	"service_account":        "service_account_email",
	"gcpTempLocation":        "temp_location",
	"gcp_temp_location":      "temp_location",
	"kms_key":                "dataflow_kms_key",
	"kmsKey":                 "dataflow_kms_key",
	"workerHarnessThreads":   "number_of_worker_harness_threads",
	"workerHarnessImage":     "sdk_container_image",
	"sdkHarnessImage":        "sdk_container_image",
	"experiment":             "experiments",
	"additionalExperiments":  "experiments",
	"additional_experiments": "experiments",
}

// ignored are flags of other SDKs with no Go equivalent, and why passing them changes nothing.
var ignored = map[string]string{
	"streaming":               "the Go SDK makes a job streaming when its source is unbounded, as the Pub/Sub read is",
	"enable_streaming_engine": "the Go SDK's Dataflow runner turns Streaming Engine on for every streaming job",
	"enableStreamingEngine":   "the Go SDK's Dataflow runner turns Streaming Engine on for every streaming job",
}

// secretFlags are the flags whose values are never logged.
var secretFlags = map[string]bool{"clickHousePassword": true}

// argNote is one thing normalizeArgs did to an argument, for the start-up log.
type argNote struct {
	Flag string // the flag as given, without dashes
	What string // "renamed to --x", "ignored: why"
}

// normalizeArgs rewrites the command line so that fs (the program's flag set: the template
// parameters and the Beam SDK's flags) accepts it: a flag fs defines is kept; a flag of another
// SDK is renamed to the Go flag of the same meaning (see aliases, and the snake_case form of a
// camelCase name); every --experiments and --additional_experiments value (Python repeats the
// flag, Java takes a comma-separated list) goes into one --experiments, as the Go SDK keeps only
// the last value; any other flag is dropped and noted, with its value. Positional arguments and
// everything after "--" are kept as they are.
//
// A flag's value is the text after "=", or, for a flag that is not a boolean, the next argument
// when that does not start with "-" (the flag package's rules).
//
// A flag that is not defined but is within two edits of a template parameter (params), or
// differs from one only in letter case, is an error: it is almost certainly that parameter
// misspelt, and ignoring it would run the job with the parameter's default.
func normalizeArgs(fs *flag.FlagSet, params []string, args []string) (out []string, notes []argNote, err error) {
	var experiments []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, value, hasValue, ok := splitFlag(arg)
		if !ok {
			out = append(out, arg)
			continue
		}
		target, why := resolve(fs, name)
		if target == "" {
			if p := nearParam(name, params); p != "" {
				return nil, nil, fmt.Errorf("flag --%s is not defined: did you mean the template parameter --%s? (names are case-sensitive)", name, p)
			}
		}
		// The value in the next argument, for a flag that takes one: as the flag package
		// does for a defined flag (whatever the argument starts with), and for a flag that is
		// ignored only when the next argument is not a flag itself.
		if !hasValue && !isBool(fs, target) && i+1 < len(args) && (target != "" || !strings.HasPrefix(args[i+1], "-")) {
			value, hasValue = args[i+1], true
			i++
		}
		switch {
		case target == "experiments":
			if name != target {
				notes = append(notes, argNote{name, "merged into --experiments"})
			}
			for _, e := range strings.Split(value, ",") {
				if e = strings.TrimSpace(e); e != "" {
					experiments = append(experiments, e)
				}
			}
		case target == "":
			notes = append(notes, argNote{name, "ignored: " + why})
		default:
			if target != name {
				notes = append(notes, argNote{name, "renamed to --" + target})
			}
			if hasValue {
				out = append(out, "--"+target+"="+value)
			} else {
				out = append(out, "--"+target)
			}
		}
	}
	if len(experiments) > 0 {
		out = append(out, "--experiments="+strings.Join(experiments, ","))
	}
	return out, notes, nil
}

// nearParam returns the template parameter that name is a misspelling of ("" if none): the same
// letters in another case, or at most two edits away (for names of five letters or more).
func nearParam(name string, params []string) string {
	for _, p := range params {
		if strings.EqualFold(name, p) || (len(name) >= 5 && editDistance(strings.ToLower(name), strings.ToLower(p)) <= 2) {
			return p
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// splitFlag splits "-name", "--name" or "--name=value"; ok is false for a positional argument.
func splitFlag(arg string) (name, value string, hasValue, ok bool) {
	if len(arg) < 2 || arg[0] != '-' {
		return "", "", false, false
	}
	s := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
	if s == "" || s[0] == '-' || s[0] == '=' {
		return "", "", false, false
	}
	name, value, hasValue = strings.Cut(s, "=")
	return name, value, hasValue, true
}

// resolve returns the flag of fs that name stands for, or "" and why it has none.
func resolve(fs *flag.FlagSet, name string) (target, why string) {
	if fs.Lookup(name) != nil || name == "help" || name == "h" {
		return name, ""
	}
	if t, ok := aliases[name]; ok {
		return t, ""
	}
	if why, ok := ignored[name]; ok {
		return "", why
	}
	if snake := toSnake(name); fs.Lookup(snake) != nil {
		return snake, ""
	}
	return "", "neither a template parameter nor a flag of the Beam Go SDK (see --help)"
}

// isBool reports whether fs's flag name is a boolean flag (one that takes no separate value).
func isBool(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// toSnake turns a camelCase name into snake_case: maxNumWorkers → max_num_workers.
func toSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// redactArgs returns args as they may be logged: the value of a secret flag (clickHousePassword,
// and any flag whose name says password, secret or token) is "xxxxx", whether it follows "=" or
// comes as the next argument (whatever that starts with, as fs's flag package takes it), and so
// is a stray argument after a secret flag given with an empty "="; the name of a Secret Manager
// secret version, which is no secret, shows as it is; an argument holding PEM text (a key
// pasted in place of its name) is "xxxxx"; a password in a URL's userinfo or query is hidden
// (see chclient.RedactURL) in any value that may hold one; and password, wherever else it
// appears, is "xxxxx" too.
func redactArgs(fs *flag.FlagSet, args []string, password string) []string {
	out := make([]string, 0, len(args))
	hideNext, hideStray := false, false
	for _, arg := range args {
		if hideStray && strings.HasPrefix(arg, "-") {
			hideNext = false // the next flag, not a stray value: shown (redacted as any flag)
		}
		hideStray = false
		if hideNext {
			hideNext = false
			if !secret.IsVersion(arg) {
				arg = "xxxxx"
			}
			out = append(out, arg)
			continue
		}
		name, value, hasValue, ok := splitFlag(arg)
		switch {
		case strings.Contains(arg, "-----BEGIN"):
			arg = "xxxxx"
			if ok && hasValue {
				arg = "--" + name + "=xxxxx"
			}
		case ok && isSecretName(name) && hasValue:
			if value != "" && !secret.IsVersion(value) {
				arg = arg[:len(arg)-len(valuePart(arg))] + "xxxxx"
			}
			// --clickHousePassword= secret: the flag takes "", and the secret is a stray argument
			// (one that is not a flag).
			hideNext, hideStray = value == "", value == ""
		case ok && isSecretName(name):
			hideNext = true
		case ok && hasValue && mayHoldURLPassword(value):
			arg = arg[:len(arg)-len(valuePart(arg))] + chclient.RedactURL(value)
		case !ok && mayHoldURLPassword(arg):
			arg = chclient.RedactURL(arg)
		}
		// A secret inside a value, as name=value (gcloud's --parameters=clickHousePassword=...).
		arg = secretPair.ReplaceAllStringFunc(arg, func(pair string) string {
			name, value, _ := strings.Cut(pair, "=")
			if value == "" || value == "xxxxx" || secret.IsVersion(value) || !isSecretName(strings.TrimLeft(name, "-")) {
				return pair
			}
			return name + "=xxxxx"
		})
		if password != "" {
			arg = strings.ReplaceAll(arg, password, "xxxxx")
		}
		out = append(out, arg)
	}
	return out
}

// secretPair matches name=value inside an argument, up to the next separator: the value of a
// secret name is hidden wherever the pair appears.
var secretPair = regexp.MustCompile(`[-A-Za-z0-9_.]*(?i:password|secret|token)[-A-Za-z0-9_.]*=[^,;&\s]*`)

// mayHoldURLPassword reports whether s may be a URL with a password: it has "://", an "@", or
// the word password.
func mayHoldURLPassword(s string) bool {
	return strings.Contains(s, "://") || strings.Contains(s, "@") || strings.Contains(strings.ToLower(s), "password")
}

// valuePart returns what follows the first "=" of a flag argument.
func valuePart(arg string) string {
	_, v, _ := strings.Cut(arg, "=")
	return v
}

func isSecretName(name string) bool {
	if secretFlags[name] {
		return true
	}
	l := strings.ToLower(name)
	for _, w := range []string{"password", "secret", "token"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// String formats a note for the log.
func (n argNote) String() string { return fmt.Sprintf("--%s: %s", n.Flag, n.What) }
