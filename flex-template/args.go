package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
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
	"serviceAccount":          "service_account_email",
	"service_account":         "service_account_email",
	"gcpTempLocation":         "temp_location",
	"gcp_temp_location":       "temp_location",
	"kms_key":                 "dataflow_kms_key",
	"kmsKey":                  "dataflow_kms_key",
	"workerHarnessThreads":    "number_of_worker_harness_threads",
	"workerHarnessImage":      "sdk_container_image",
	"sdkHarnessImage":         "sdk_container_image",
	"experiment":              "experiments",
	"additionalExperiments":   "experiments",
	"additional_experiments":  "experiments",
	"dataflowServiceOption":   "dataflow_service_options",
	"dataflow_service_option": "dataflow_service_options",
	"transformNameMappings":   "transform_name_mapping",
	"transform_name_mappings": "transform_name_mapping",
	"additionalUserLabels":    "labels",
	"additional_user_labels":  "labels",
}

// listFlags are the Beam flags that hold a comma-separated list, of which the Go SDK keeps only
// the last value given: normalizeArgs joins every value of each into one.
var listFlags = []string{"experiments", "dataflow_service_options"}

// mapFlags are the Beam flags that hold a map, which the Go SDK reads as JSON only
// (--labels={"k":"v"}, --transform_name_mapping={"old":"new"}) and keeps only the last of:
// normalizeArgs merges every value of each, as JSON or as gcloud's k=v,k2=v2, into one JSON
// object.
var mapFlags = []string{"labels", "transform_name_mapping"}

// ignored are flags of other SDKs with no Go equivalent, and why passing them changes nothing.
var ignored = map[string]string{
	"streaming":               "the Go SDK makes a job streaming when its source is unbounded, as the Pub/Sub read is",
	"enable_streaming_engine": "the Go SDK's Dataflow runner turns Streaming Engine on for every streaming job",
	"enableStreamingEngine":   "the Go SDK's Dataflow runner turns Streaming Engine on for every streaming job",
}

// ignoredFlag returns why the flag name is one of ignored, in any of the spellings resolve
// takes for a flag (gcloud's hyphens, another letter case: --enable-streaming-engine).
func ignoredFlag(name string) (why string, ok bool) {
	if why, ok := ignored[name]; ok {
		return why, true
	}
	for k, why := range ignored {
		if looseName(k) == looseName(name) {
			return why, true
		}
	}
	return "", false
}

// secretFlags are the flags whose values are never logged.
var secretFlags = map[string]bool{"clickHousePassword": true}

// argNote is one thing normalizeArgs did to an argument, for the start-up log.
type argNote struct {
	Flag string // the flag as given, without dashes
	What string // "renamed to --x", "ignored: why"
	// Unknown is true for a flag that is neither a template parameter nor a flag of the Beam Go
	// SDK, nor an other SDK's flag ignored on purpose (ignored): see refuseUnknown.
	Unknown bool
}

// refuseUnknown returns the error of the unknown flags among notes (argNote.Unknown) on a
// command line typed by hand: one that is neither the Flex Template launcher's
// (FLEX_TEMPLATE_GO_BINARY set), whose own flags this binary cannot list, nor a Dataflow worker's
// (--worker), which Beam's container starts. Ignored, a misspelt or another template's parameter
// (--batchSize, --deadLetterTable) would run the job without it.
func refuseUnknown(notes []argNote, args []string, launcher bool) error {
	if launcher || slices.ContainsFunc(args, func(a string) bool { name, _, _, ok := splitFlag(a); return ok && name == "worker" }) {
		return nil
	}
	var unknown []string
	for _, n := range notes {
		if n.Unknown {
			unknown = append(unknown, "--"+n.Flag)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return fmt.Errorf("%s: neither a template parameter nor a flag of the Beam Go SDK (--help lists them); nothing was started",
		strings.Join(unknown, ", "))
}

// normalizeArgs rewrites the command line so that fs (the program's flag set: the template
// parameters and the Beam SDK's flags) accepts it: a flag fs defines is kept; a flag of another
// SDK is renamed to the Go flag of the same meaning (see aliases, and the snake_case form of a
// camelCase name); every value of a list flag (listFlags: --experiments, which Python repeats
// and Java takes comma-separated, with --additional_experiments; --dataflow_service_options)
// goes into one flag of that name, as the Go SDK keeps only the last value; every value of a map
// flag (mapFlags: --labels, --transform_name_mapping), JSON or k=v,k2=v2, goes into one JSON
// object (a key given twice with two values is an error); any other flag is dropped and noted,
// with its value. Positional arguments and everything after "--" are kept as they are.
//
// A flag's value is the text after "=", or, for a flag that is not a boolean, the next argument
// when that does not start with "-" (the flag package's rules).
//
// A flag that is not defined but is within two edits of a template parameter (params), or
// differs from one only in letter case, is an error: it is almost certainly that parameter
// misspelt, and ignoring it would run the job with the parameter's default. A Beam flag given
// with hyphens, in another letter case or without its underscores (--dry-run, --flexRSGoal) is
// that flag; one within two edits of a Beam flag (--dry_rn) is an error too (nearFlag), since
// ignoring it would, say, submit the job a dry run was meant to show.
func normalizeArgs(fs *flag.FlagSet, params []string, args []string) (out []string, notes []argNote, err error) {
	lists := map[string][]string{}
	mapValues := map[string]map[string]string{}
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
			if f := nearFlag(fs, name); f != "" {
				return nil, nil, fmt.Errorf("flag --%s is not defined: did you mean --%s? (a flag of the Beam Go SDK; a misspelt one would be ignored, "+
					"and the job would run without it)", name, f)
			}
		}
		// The value in the next argument, for a flag that takes one: as the flag package
		// does for a defined flag (whatever the argument starts with), and for a flag that is
		// ignored only when the next argument is not a flag itself.
		if !hasValue && !isBool(fs, target) && i+1 < len(args) && (target != "" || !strings.HasPrefix(args[i+1], "-")) {
			value, hasValue = args[i+1], true
			i++
		}
		if target == "job_name" && hasValue && (len(value) > 1024 || !jobName.MatchString(value)) {
			return nil, nil, fmt.Errorf("--job_name %q is not a Dataflow job name: a name is 1 to 1024 lowercase letters, digits and -, "+
				"starting with a letter and not ending with - (the Dataflow API's Job.name, [a-z]([-a-z0-9]{0,1022}[a-z0-9])?)", value)
		}
		switch {
		case slices.Contains(listFlags, target):
			if name != target || len(lists[target]) > 0 {
				notes = append(notes, argNote{Flag: name, What: "merged into --" + target})
			}
			for _, e := range strings.Split(value, ",") {
				if e = strings.TrimSpace(e); e != "" && !slices.Contains(lists[target], e) {
					lists[target] = append(lists[target], e)
				}
			}
		case slices.Contains(mapFlags, target):
			if name != target || mapValues[target] != nil {
				notes = append(notes, argNote{Flag: name, What: "merged into --" + target})
			}
			if mapValues[target] == nil {
				mapValues[target] = map[string]string{}
			}
			if err := mergeMap(mapValues[target], name, value); err != nil {
				return nil, nil, err
			}
		case target == "":
			_, known := ignoredFlag(name)
			notes = append(notes, argNote{name, "ignored: " + why, !known})
		default:
			if target != name {
				notes = append(notes, argNote{Flag: name, What: "renamed to --" + target})
			}
			if hasValue {
				out = append(out, "--"+target+"="+value)
			} else {
				out = append(out, "--"+target)
			}
		}
	}
	for _, name := range listFlags {
		if len(lists[name]) > 0 {
			out = append(out, "--"+name+"="+strings.Join(lists[name], ","))
		}
	}
	for _, name := range mapFlags {
		if m := mapValues[name]; m != nil {
			if name == "labels" {
				if err := checkLabels(m); err != nil {
					return nil, nil, err
				}
			}
			b, _ := json.Marshal(m) // a map[string]string always marshals; its keys come sorted
			out = append(out, "--"+name+"="+string(b))
		}
	}
	return out, notes, nil
}

// repeatedParams returns the template parameters (params) that args, as normalizeArgs returns
// them (--name=value, or --name for a boolean, up to "--"), give more than once with different
// values, in the order of their second value. The flag package keeps the last value of a flag
// given twice, which the demo relies on (FLAGS after its own); main logs a warning naming each,
// never its value (a password, or a URL that holds one, among them).
func repeatedParams(params []string, args []string) []string {
	first := map[string]string{}
	var repeated []string
	for _, arg := range args {
		if arg == "--" {
			break
		}
		name, value, hasValue, ok := splitFlag(arg)
		if !ok || !slices.Contains(params, name) {
			continue
		}
		if !hasValue {
			value = "true" // a bare boolean
		}
		v, seen := first[name]
		switch {
		case !seen:
			first[name] = value
		case v != value && !slices.Contains(repeated, name):
			repeated = append(repeated, name)
		}
	}
	return repeated
}

// mergeMap adds to m the entries of value, the value of the map flag name: a JSON object of
// strings ({"team":"data","env":"prod"}), or gcloud's form, k=v pairs separated by commas
// (team=data,env=prod; a value may hold "=" but not ","). A key already in m with another
// value is an error.
func mergeMap(m map[string]string, name, value string) error {
	value = strings.TrimSpace(value)
	entries := map[string]string{}
	switch {
	case value == "":
		return nil
	case strings.HasPrefix(value, "{"):
		if err := json.Unmarshal([]byte(value), &entries); err != nil {
			return fmt.Errorf("--%s %q: not a JSON object of strings (%v): give {\"key\":\"value\",...} or key=value,key2=value2", name, value, err)
		}
	default:
		for _, pair := range strings.Split(value, ",") {
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return fmt.Errorf("--%s %q: %q is not key=value: give key=value,key2=value2 or a JSON object {\"key\":\"value\",...}", name, value, pair)
			}
			if _, dup := entries[k]; dup {
				return fmt.Errorf("--%s %q: the key %q is given twice", name, value, k)
			}
			entries[k] = strings.TrimSpace(v)
		}
	}
	for k, v := range entries {
		if old, ok := m[k]; ok && old != v {
			return fmt.Errorf("--%s: the key %q is given twice, as %q and as %q: give it once", name, k, old, v)
		}
		m[k] = v
	}
	return nil
}

// Label keys and values, as Compute Engine and Dataflow take them
// (https://cloud.google.com/compute/docs/labeling-resources#requirements): a key of 1 to 63
// lowercase letters, digits, "_" and "-", starting with a letter; a value of 0 to 63 of the same.
var (
	labelKey   = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValue = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
)

// jobName is a Dataflow job name of at most 1024 bytes, as the Dataflow API's Job.name documents
// it, [a-z]([-a-z0-9]{0,1022}[a-z0-9])? (https://cloud.google.com/dataflow/docs/reference/rest/v1b3/projects.jobs#Job);
// RE2 takes no repeat count over 1000, so the length is checked apart.
var jobName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// checkLabels checks the job's labels against the label rules, so that a label the service would
// refuse stops the launch here, with the rule.
func checkLabels(m map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case !labelKey.MatchString(k):
			errs = append(errs, fmt.Errorf("--labels: the key %q is not a label key: a key is 1 to 63 lowercase letters, digits, _ and -, starting with a letter", k))
		case !labelValue.MatchString(m[k]):
			errs = append(errs, fmt.Errorf("--labels: the value %q of %q is not a label value: a value is at most 63 lowercase letters, digits, _ and -", m[k], k))
		}
	}
	return errors.Join(errs...)
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

// nearFlag returns the flag of fs (a Beam flag: the template parameters are nearParam's) that
// name is one or two edits from, when name is long enough for that to mean a misspelling (8
// bytes or more; --dryrun for --dry_run, --max_num_worker, --lables), or differs from only in
// letter case; "" when none is. Flags of other SDKs that have no Go equivalent are far from
// every Go flag (--save_main_session, --setup_file): not misspellings, but flags of no kind
// (refuseUnknown).
func nearFlag(fs *flag.FlagSet, name string) string {
	lower, found := strings.ToLower(name), ""
	fs.VisitAll(func(f *flag.Flag) {
		if found != "" {
			return
		}
		d := editDistance(lower, strings.ToLower(f.Name))
		if d == 0 || (d == 1 && len(name) >= 5) || (d == 2 && len(name) >= 6) {
			found = f.Name
		}
	})
	return found
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
	if why, ok := ignoredFlag(name); ok {
		return "", why
	}
	if snake := toSnake(name); fs.Lookup(snake) != nil {
		return snake, ""
	}
	// gcloud's hyphens and other spellings of the same words: --dry-run, --max-num-workers,
	// Java's --flexRSGoal for --flexrs_goal.
	// Not for a template parameter (camelCase), whose name is case-sensitive (see nearParam).
	loose := looseName(name)
	fs.VisitAll(func(f *flag.Flag) {
		if target == "" && f.Name == strings.ToLower(f.Name) && looseName(f.Name) == loose {
			target = f.Name
		}
	})
	if target != "" {
		return target, ""
	}
	return "", "neither a template parameter nor a flag of the Beam Go SDK (see --help)"
}

// looseName is name in lower case without underscores and hyphens.
func looseName(name string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(name))
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
// and any flag whose name says password, secret or token) is secret.Mask, whether it follows "=" or
// comes as the next argument (whatever that starts with, as fs's flag package takes it), and so
// is a stray argument after a secret flag given with an empty "="; the name of a Secret Manager
// secret version, which is no secret, shows as it is; an argument holding PEM text or its
// base64 body alone (a key pasted in place of its name: secret.KeyText) is secret.Mask; a password in a URL's userinfo or query is hidden
// (see chclient.RedactURL) in any value that may hold one; and password, wherever else it
// appears, is secret.Mask too.
func redactArgs(fs *flag.FlagSet, args []string, password secret.String) []string {
	out := make([]string, 0, len(args))
	hideNext, hideStray := false, false
	for _, arg := range args {
		if hideStray && strings.HasPrefix(arg, "-") {
			hideNext = false // the next flag, not a stray value: shown (redacted as any flag)
		}
		hideStray = false
		if hideNext {
			hideNext = false
			if !secret.String(arg).IsVersion() {
				arg = secret.Mask
			}
			out = append(out, arg)
			continue
		}
		name, value, hasValue, ok := splitFlag(arg)
		switch {
		case strings.Contains(arg, "-----BEGIN") || ok && hasValue && holdsKeyOrCertificate(name) && secret.KeyText(value) || !ok && secret.KeyText(arg):
			arg = secret.Mask
			if ok && hasValue {
				arg = "--" + name + "=" + secret.Mask
			}
		case ok && isSecretName(name) && hasValue:
			arg = arg[:len(arg)-len(valuePart(arg))] + secret.String(value).String()
			// --clickHousePassword= secret: the flag takes "", and the secret is a stray argument
			// (one that is not a flag).
			hideNext, hideStray = value == "", value == ""
		case ok && isSecretName(name):
			// A defined flag that takes a value takes the next argument, whatever it starts
			// with; another (a bool, a flag fs does not define) only one that is not a flag.
			defined := fs.Lookup(name) != nil && !isBool(fs, name)
			hideNext, hideStray = true, !defined
		case ok && hasValue && mayHoldURLPassword(value):
			arg = arg[:len(arg)-len(valuePart(arg))] + chclient.RedactURL(value)
		case !ok && mayHoldURLPassword(arg):
			arg = chclient.RedactURL(arg)
		}
		// A secret inside a value, as name=value (gcloud's --parameters=clickHousePassword=...).
		arg = secretPair.ReplaceAllStringFunc(arg, func(pair string) string {
			name, value, _ := strings.Cut(pair, "=")
			shown := secret.String(value).String()
			if shown == value || !isSecretName(strings.TrimLeft(name, "-")) {
				return pair
			}
			return name + "=" + shown
		})
		arg = password.Hide(arg)
		out = append(out, arg)
	}
	return out
}

// holdsKeyOrCertificate reports whether the flag name is one of a key or a certificate
// (clickHouseClientKey, clickHouseCaCertificate, ...), whose value redactArgs hides when it looks
// like a key's base64 body (secret.KeyText): another flag's long value of mixed case and digits
// (a table name) is shown.
// strayShown is how the error of a stray argument shows it, after the argument before it, prev:
// ` ("false")`, quoted; "" when it may be the rest of a secret that a space split (an unquoted
// --clickHousePassword=ab cd, a URL's password, a key's PEM text), which the error must not
// print (the Flex Template launcher's log keeps standard error).
func strayShown(prev, stray string) string {
	name, value, _, ok := splitFlag(prev)
	if !ok || isSecretName(name) || holdsKeyOrCertificate(name) || mayHoldURLPassword(value) || mayHoldURLPassword(stray) || secret.KeyText(stray) {
		return ""
	}
	return fmt.Sprintf(" (%q)", stray)
}

func holdsKeyOrCertificate(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "key") || strings.Contains(n, "cert") // certificate too
}

// secretPair matches name=value inside an argument, up to the next separator: the value of a
// secret name is hidden wherever the pair appears.
var secretPair = regexp.MustCompile(`[-A-Za-z0-9_.]*` + secret.SecretWordsPattern + `[-A-Za-z0-9_.]*=[^,;&\s]*`)

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

// isSecretName reports whether the value of the flag name may be a secret: clickHousePassword,
// and any flag whose name says so (secret.SecretName: a misspelt --clickHousePass is no flag of
// the binary, and its value would be logged as given).
func isSecretName(name string) bool {
	return secretFlags[name] || secret.SecretName(name)
}

// String formats a note for the log.
func (n argNote) String() string { return fmt.Sprintf("--%s: %s", n.Flag, n.What) }
