package psclient

import (
	"errors"
	"fmt"
	"strings"
)

// Collection is the kind of a Pub/Sub resource Name names: the collection of its path.
type Collection string

// The two collections of the job's Pub/Sub resources.
const (
	Subscriptions Collection = "subscriptions"
	Topics        Collection = "topics"
)

// singular is "subscription" or "topic", for messages.
func (c Collection) singular() string { return strings.TrimSuffix(string(c), "s") }

// form is projects/<project>/<collection>/<name>, for messages.
func (c Collection) form() string { return "projects/<project>/" + string(c) + "/<name>" }

// Name is a Pub/Sub subscription or topic name, projects/<project>/<collection>/<id>, as
// ParseSubscription or ParseTopic accepted it. It is the one reader of those names: the
// template's checks, the readers, the acknowledgement and the dead-letter topic all take a Name
// from it. Its fields are exported so that a DoFn holding one serialises it.
type Name struct {
	Project    string     // a project ID (plain or domain-scoped, example.com:my-project) or a project number
	Collection Collection // Subscriptions or Topics
	ID         string     // the subscription or topic ID
}

// String returns the full name, projects/<project>/<collection>/<id>.
func (n Name) String() string {
	return "projects/" + n.Project + "/" + string(n.Collection) + "/" + n.ID
}

// ParseSubscription reads a Pub/Sub subscription name, projects/<project>/subscriptions/<name>,
// by Pub/Sub's resource name rules
// (https://cloud.google.com/pubsub/docs/pubsub-basics#resource_names) and Google Cloud's
// project ID rules (https://cloud.google.com/resource-manager/docs/creating-managing-projects):
//
//   - the project is a project ID of 6 to 30 lowercase letters, digits and hyphens, starting
//     with a letter and not ending with a hyphen; or a domain-scoped project ID,
//     example.com:my-project (the part after the colon by the same rule); or a project number
//     of 1 to 19 digits without a leading zero (projects/123456789012/subscriptions/s);
//   - the subscription ID is 3 to 255 characters, starts with a letter, holds only letters,
//     digits and - _ . ~ + %, and does not start with "goog".
//
// The error is a *NameError, which tells the broken rule and does not repeat s.
func ParseSubscription(s string) (Name, error) { return parse(s, Subscriptions, Topics) }

// ParseTopic reads a Pub/Sub topic name, projects/<project>/topics/<name>, by the rules of
// ParseSubscription. The error is a *NameError, which tells the broken rule and does not repeat
// s.
func ParseTopic(s string) (Name, error) { return parse(s, Topics, Subscriptions) }

// NameError is a Pub/Sub name that ParseSubscription or ParseTopic refused.
type NameError struct {
	Collection Collection // what the name was meant to be
	Rule       string     // the rule it breaks, without the name
}

func (e *NameError) Error() string { return e.Rule }

// parse reads projects/<project>/<collection>/<id>; other is the collection likely given by
// mistake.
func parse(s string, collection, other Collection) (Name, error) {
	refuse := func(format string, args ...any) (Name, error) {
		return Name{}, &NameError{collection, fmt.Sprintf(format, args...)}
	}
	parts := strings.Split(s, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[2] != string(collection) {
		if len(parts) == 4 && parts[0] == "projects" && parts[2] == string(other) {
			return refuse("is the name of a Pub/Sub %s, not of a %s; want %s", other.singular(), collection.singular(), collection.form())
		}
		return refuse("must have the form %s", collection.form())
	}
	if err := checkProject(parts[1]); err != nil {
		return refuse("project ID %q %v", parts[1], err)
	}
	if err := checkID(parts[3]); err != nil {
		return refuse("%s ID %q %v", collection.singular(), parts[3], err)
	}
	return Name{Project: parts[1], Collection: collection, ID: parts[3]}, nil
}

// checkProject checks a Google Cloud project ID, plain or domain-scoped, or a project number.
func checkProject(p string) error {
	if p == "" {
		return errors.New("must not be empty")
	}
	if strings.Trim(p, "0123456789") == "" {
		if len(p) > 19 || p[0] == '0' {
			return errors.New("is a project number, which must be 1 to 19 digits without a leading zero")
		}
		return nil
	}
	if domain, name, scoped := strings.Cut(p, ":"); scoped {
		if err := checkDomain(domain); err != nil {
			return fmt.Errorf("has an invalid domain before \":\": %v", err)
		}
		p = name
	}
	switch {
	case len(p) < 6 || len(p) > 30:
		return fmt.Errorf("must be 6 to 30 characters long (not %d)", len(p))
	case p[0] < 'a' || p[0] > 'z':
		return errors.New("must start with a lowercase letter")
	case strings.Trim(p, "abcdefghijklmnopqrstuvwxyz0123456789-") != "":
		return errors.New("may hold only lowercase letters, digits and hyphens")
	case strings.HasSuffix(p, "-"):
		return errors.New("must not end with a hyphen")
	}
	return nil
}

// checkDomain checks the domain of a domain-scoped project ID, such as example.com: lowercase
// labels of letters, digits and inner hyphens, at least two of them.
func checkDomain(d string) error {
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return errors.New("want a domain such as example.com")
	}
	for _, l := range labels {
		if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
			strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return errors.New("want a lowercase domain such as example.com")
		}
	}
	return nil
}

// checkID checks a Pub/Sub topic or subscription ID.
func checkID(id string) error {
	const allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+%"
	switch {
	case id == "":
		return errors.New("must not be empty")
	case !('a' <= id[0] && id[0] <= 'z' || 'A' <= id[0] && id[0] <= 'Z'):
		return errors.New("must start with a letter")
	case strings.Trim(id, allowed) != "":
		return errors.New("may hold only letters, digits and - _ . ~ + %")
	case len(id) < 3 || len(id) > 255:
		return fmt.Errorf("must be 3 to 255 characters long (not %d)", len(id))
	case strings.HasPrefix(id, "goog"):
		return errors.New(`must not start with "goog"`)
	}
	return nil
}
