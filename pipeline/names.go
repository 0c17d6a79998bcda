// Pub/Sub resource names: the checks of inputSubscription and deadLetterTopic.

package pipeline

import (
	"errors"
	"fmt"
	"strings"
)

// SplitSubscription splits a Pub/Sub subscription name,
// projects/<project>/subscriptions/<name>, into the project ID and the
// subscription ID, by Pub/Sub's resource name rules
// (https://cloud.google.com/pubsub/docs/pubsub-basics#resource_names) and
// Google Cloud's project ID rules
// (https://cloud.google.com/resource-manager/docs/creating-managing-projects):
//
//   - the project ID is 6 to 30 lowercase letters, digits and hyphens,
//     starting with a letter and not ending with a hyphen; a domain-scoped
//     project ID, example.com:my-project, is accepted too (the part after
//     the colon by the same rule);
//   - the subscription ID is 3 to 255 characters, starts with a letter, holds
//     only letters, digits and - _ . ~ + %, and does not start with "goog".
//
// The error tells the broken rule; it does not repeat s.
func SplitSubscription(s string) (project, id string, err error) {
	return splitResource(s, "subscriptions", "topics")
}

// SplitTopic splits a Pub/Sub topic name, projects/<project>/topics/<name>,
// into the project ID and the topic ID, by the rules of [SplitSubscription].
// The error tells the broken rule; it does not repeat s.
func SplitTopic(s string) (project, id string, err error) {
	return splitResource(s, "topics", "subscriptions")
}

// splitResource splits projects/<project>/<collection>/<id>; other is the
// collection that is likely given by mistake.
func splitResource(s, collection, other string) (project, id string, err error) {
	form := "projects/<project>/" + collection + "/<name>"
	parts := strings.Split(s, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[2] != collection {
		if len(parts) == 4 && parts[0] == "projects" && parts[2] == other {
			return "", "", fmt.Errorf("is the name of a Pub/Sub %s, not of a %s; want %s",
				singular(other), singular(collection), form)
		}
		return "", "", fmt.Errorf("must have the form %s", form)
	}
	if err := checkProjectID(parts[1]); err != nil {
		return "", "", fmt.Errorf("project ID %q %v", parts[1], err)
	}
	if err := checkResourceID(parts[3]); err != nil {
		return "", "", fmt.Errorf("%s ID %q %v", singular(collection), parts[3], err)
	}
	return parts[1], parts[3], nil
}

func singular(collection string) string { return strings.TrimSuffix(collection, "s") }

// checkProjectID checks a Google Cloud project ID, plain or domain-scoped, or a project number
// (Pub/Sub's resource names take either: projects/123456789012/subscriptions/s).
func checkProjectID(p string) error {
	if p == "" {
		return errors.New("must not be empty")
	}
	if strings.Trim(p, "0123456789") == "" {
		if len(p) > 19 || p[0] == '0' {
			return fmt.Errorf("a project number must be 1 to 19 digits, without a leading zero (not %q)", p)
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

// checkDomain checks the domain of a domain-scoped project ID, such as
// example.com: lowercase labels of letters, digits and inner hyphens,
// at least two of them.
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

// checkResourceID checks a Pub/Sub topic or subscription ID.
func checkResourceID(id string) error {
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
