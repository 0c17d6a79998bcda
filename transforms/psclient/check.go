// Package psclient holds the Pub/Sub plumbing the stages share: the start-up checks of the
// input subscription and the dead-letter topic, made so that they pass for a service account
// with exactly the roles the job needs.
//
// Pub/Sub's predefined roles (https://cloud.google.com/pubsub/docs/access-control#roles):
// roles/pubsub.subscriber grants pubsub.subscriptions.consume but not pubsub.subscriptions.get,
// and roles/pubsub.publisher grants pubsub.topics.publish but not pubsub.topics.get. So a check
// first asks for the resource (GetSubscription, GetTopic: it tells a missing resource from a
// forbidden one) and, when that is denied, asks TestIamPermissions for the permission the job
// needs, which any caller may ask about a resource it can reach.
package psclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The permissions the job needs on its Pub/Sub resources.
const (
	// ConsumePermission lets the job pull and acknowledge from the input subscription
	// (roles/pubsub.subscriber).
	ConsumePermission = "pubsub.subscriptions.consume"
	// PublishPermission lets the job publish dead letters to the topic (roles/pubsub.publisher).
	PublishPermission = "pubsub.topics.publish"
)

// checkTimeout bounds each call of a check.
const checkTimeout = 30 * time.Second

// CheckError is a failed check of the job's subscription or topic: Pub/Sub's answer explained in
// one sentence that starts with the name and says what to fix (the name, the permission and the
// role, or the service that does not answer). It names no template parameter: the caller knows
// which parameter gave Name.
type CheckError struct {
	Name Name
	Err  error // the sentence, wrapping the client's error where there is one
}

func (e *CheckError) Error() string { return e.Err.Error() }
func (e *CheckError) Unwrap() error { return e.Err }

// Check creates a Pub/Sub client of n's project, checks n with CheckSubscription or CheckTopic
// and closes the client: the start-up check of a launch. Its errors are *CheckError.
func Check(ctx context.Context, n Name) error {
	client, err := NewCheckedClient(ctx, n.Project)
	if err != nil {
		return &CheckError{n, fmt.Errorf("%s: creating the Pub/Sub client: %w", n, err)}
	}
	defer client.Close()
	if n.Collection == Topics {
		return CheckTopic(ctx, client, n)
	}
	return CheckSubscription(ctx, client, n)
}

// CheckSubscription checks that the job can read the subscription n: that it exists, or at
// least that the caller holds pubsub.subscriptions.consume on it, that Pub/Sub (or the
// emulator of PUBSUB_EMULATOR_HOST) answers, and, when Pub/Sub describes it, that it is not
// detached from its topic: a detached subscription receives nothing, keeps no backlog, and its
// Pulls fail with FAILED_PRECONDITION (the detached field of google.pubsub.v1.Subscription).
// Its errors are *CheckError.
func CheckSubscription(ctx context.Context, client *pubsub.Client, n Name) error {
	var detached bool
	if err := check(ctx, n, ConsumePermission, "roles/pubsub.subscriber",
		func(ctx context.Context) error {
			s, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: n.String()})
			detached = s.GetDetached()
			return err
		}, client.SubscriptionAdminClient.TestIamPermissions); err != nil {
		return err
	}
	if detached {
		return &CheckError{n, fmt.Errorf("%s is detached from its topic: Pub/Sub delivers it no message and keeps no backlog, and refuses its Pulls "+
			"(FAILED_PRECONDITION); create a subscription on the topic and give that one", n)}
	}
	return nil
}

// CheckTopic checks that the job can publish to the topic n: that it exists, or at least that
// the caller holds pubsub.topics.publish on it. Its errors are *CheckError, as
// CheckSubscription's.
func CheckTopic(ctx context.Context, client *pubsub.Client, n Name) error {
	return check(ctx, n, PublishPermission, "roles/pubsub.publisher",
		func(ctx context.Context) error {
			_, err := client.TopicAdminClient.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: n.String()})
			return err
		}, client.TopicAdminClient.TestIamPermissions)
}

// CheckNotInput checks that the dead-letter topic is not the topic the input subscription sub
// reads: every dead letter published there would come back as input, fail again and be
// published again, without end. A subscription with a filter passes, with a warning: its filter
// may keep the dead letters out (they carry the attribute errorMessage). It asks Pub/Sub for the subscription (GetSubscription, which
// needs pubsub.subscriptions.get: roles/pubsub.subscriber lacks it); when that is denied or
// fails, the check cannot tell, and passes (CheckSubscription has said whether the subscription
// can be read). Its error is a *CheckError of topic.
func CheckNotInput(ctx context.Context, sub, topic Name) error {
	client, err := NewCheckedClient(ctx, sub.Project)
	if err != nil {
		return nil // CheckSubscription made the same client and said so
	}
	defer client.Close()
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	s, err := client.SubscriptionAdminClient.GetSubscription(cctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub.String()})
	switch {
	case err != nil || s.GetTopic() != topic.String():
	case s.GetFilter() != "":
		// A filter may keep the dead letters out (NOT attributes:errorMessage): whether it does
		// is Pub/Sub's filter syntax to read, not this check's.
		slog.Warn("deadLetterTopic is the topic of the input subscription, which has a filter: it must keep the dead letters out "+
			"(they carry the attribute errorMessage: NOT attributes:errorMessage), or each comes back as input and fails again, without end",
			"topic", topic.String(), "subscription", sub.String(), "filter", s.GetFilter())
	default:
		return &CheckError{topic, fmt.Errorf("%s is the topic of the input subscription %s: every dead letter published there would come back "+
			"as input, fail again and be published again, without end; give a topic of its own for dead letters (or a subscription "+
			"whose filter keeps them out: NOT attributes:errorMessage)", topic, sub)}
	}
	return nil
}

// TopicSchema returns the schema that topic n validates its messages against (its
// schema_settings: the schema's name, projects/<project>/schemas/<schema>, and its encoding,
// JSON or BINARY), asking Pub/Sub with GetTopic; schema is "" when the topic has none. known is
// false when Pub/Sub does not say (pubsub.topics.get denied, as roles/pubsub.publisher lacks it,
// or the call failed: CheckTopic has said whether the topic can be published to). Pub/Sub refuses
// a publish whose data does not conform to the topic's schema
// (https://cloud.google.com/pubsub/docs/schemas).
func TopicSchema(ctx context.Context, n Name) (schema, encoding string, known bool) {
	client, err := NewCheckedClient(ctx, n.Project)
	if err != nil {
		return "", "", false
	}
	defer client.Close()
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	t, err := client.TopicAdminClient.GetTopic(cctx, &pubsubpb.GetTopicRequest{Topic: n.String()})
	if err != nil {
		return "", "", false
	}
	if s := t.GetSchemaSettings(); s.GetSchema() != "" {
		return s.GetSchema(), s.GetEncoding().String(), true
	}
	return "", "", true
}

// TopicKeeps reports whether Pub/Sub keeps what is published to topic n for anyone to read:
// subscribed when a subscription is attached to it (ListTopicSubscriptions), retained when the
// topic itself keeps its messages (its message_retention_duration, GetTopic), so that a
// subscription made later can seek back to them. Pub/Sub delivers a message only to the
// subscriptions that exist when it is published (https://cloud.google.com/pubsub/docs/subscriber):
// with neither, what is published there is lost. known is false when Pub/Sub does not say (the
// listing or GetTopic denied, as to roles/pubsub.publisher, or failed). It makes a client of its
// own: the start-up check of a launch (TopicKeepsWith for a client at hand).
func TopicKeeps(ctx context.Context, n Name) (subscribed, retained, known bool) {
	client, err := NewCheckedClient(ctx, n.Project)
	if err != nil {
		return false, false, false
	}
	defer client.Close()
	subscribed, retained, err = TopicKeepsWith(ctx, client, n)
	return subscribed, retained, err == nil
}

// TopicKeepsWith is TopicKeeps with client, and the error of a call that failed (nil when
// Pub/Sub said): a PermissionDenied one says the caller may not ask (roles/pubsub.publisher may
// not). It asks ListTopicSubscriptions first, and GetTopic only when the topic has no
// subscription: retained is false whenever subscribed is true, and one call is made for a topic
// with a subscription (the dead-letter stage asks before each publish).
func TopicKeepsWith(ctx context.Context, client *pubsub.Client, n Name) (subscribed, retained bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	it := client.TopicAdminClient.ListTopicSubscriptions(cctx, &pubsubpb.ListTopicSubscriptionsRequest{Topic: n.String(), PageSize: 1})
	switch _, err := it.Next(); {
	case err == nil:
		return true, false, nil
	case !errors.Is(err, iterator.Done):
		return false, false, err
	}
	t, err := client.TopicAdminClient.GetTopic(cctx, &pubsubpb.GetTopicRequest{Topic: n.String()})
	if err != nil {
		return false, false, err
	}
	return false, t.GetMessageRetentionDuration().AsDuration() > 0, nil
}

// NoSubscriptionError is the error of a topic that keeps nothing published to it (TopicKeeps:
// no subscription, no retention), for a caller whose messages would then be lost: what names
// them ("every dead letter"); the error gives the command that makes a subscription (on the
// emulator, this binary's publish --create).
func NoSubscriptionError(n Name, what string) error {
	return &CheckError{n, fmt.Errorf("%s has no subscription, and Pub/Sub delivers a message only to the subscriptions that exist when "+
		"it is published: %s would reach no one and be lost; create a subscription on it first (%s)", n, what, SubscribeCommand(n))}
}

// SubscribeCommand returns the command that creates a subscription on topic n: gcloud's, or on
// the emulator (PUBSUB_EMULATOR_HOST set) this binary's publish --create.
func SubscribeCommand(n Name) string {
	if os.Getenv("PUBSUB_EMULATOR_HOST") != "" {
		return fmt.Sprintf("pubsub-to-clickhouse publish --create --topic=%s --subscription=projects/%s/subscriptions/<name>", n, n.Project)
	}
	return fmt.Sprintf("gcloud pubsub subscriptions create <name> --topic=%s --project=%s", n.ID, n.Project)
}

// MessageOrdering reports whether the subscription n delivers in order (its
// enable_message_ordering), asking Pub/Sub with GetSubscription; known is false when Pub/Sub
// does not say (pubsub.subscriptions.get denied, as roles/pubsub.subscriber lacks it, or the call
// failed: CheckSubscription has said whether the subscription can be read).
func MessageOrdering(ctx context.Context, n Name) (enabled, known bool) {
	client, err := NewCheckedClient(ctx, n.Project)
	if err != nil {
		return false, false
	}
	defer client.Close()
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	s, err := client.SubscriptionAdminClient.GetSubscription(cctx, &pubsubpb.GetSubscriptionRequest{Subscription: n.String()})
	if err != nil {
		return false, false
	}
	return s.GetEnableMessageOrdering(), true
}

// check asks for the resource with get and, when that is denied (the role the job needs lacks
// the .get permission), asks testIAM whether the caller holds perm on it.
func check(ctx context.Context, n Name, perm, role string, get func(context.Context) error,
	testIAM func(context.Context, *iampb.TestIamPermissionsRequest, ...gax.CallOption) (*iampb.TestIamPermissionsResponse, error)) error {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	err := get(cctx)
	if status.Code(err) == codes.PermissionDenied {
		resp, terr := testIAM(cctx, &iampb.TestIamPermissionsRequest{Resource: n.String(), Permissions: []string{perm}})
		err = permission(n.String(), perm, role, resp, terr, err)
	} else {
		err = answer(n.String(), err)
	}
	if err != nil {
		return &CheckError{n, err}
	}
	return nil
}

// permission turns the answer of TestIamPermissions into the check's result. getErr is the
// denied Get, quoted when TestIamPermissions fails too.
func permission(name, perm, role string, resp *iampb.TestIamPermissionsResponse, err, getErr error) error {
	switch {
	case err == nil && slices.Contains(resp.GetPermissions(), perm):
		return nil
	case err == nil:
		return fmt.Errorf("%s: the job's service account lacks the permission %s: grant it %s on %s (or a role that holds %s)",
			name, perm, role, name, perm)
	case status.Code(err) == codes.NotFound:
		return answer(name, err)
	default:
		return fmt.Errorf("%s: the job's service account may not read it (%v), and asking Pub/Sub whether it holds %s failed too: %w; grant it %s on %s",
			name, status.Convert(getErr).Message(), perm, err, role, name)
	}
}

// NotFound explains err, a call's NotFound for the topic or subscription name, in the sentence
// of the checks: the name, and on the emulator (which holds nothing until it is told) the
// publish --create command that creates it. Any other err is returned as it is.
func NotFound(name string, err error) error {
	if status.Code(err) != codes.NotFound {
		return err
	}
	return answer(name, err)
}

// answer turns the error of a Get into the check's result.
func answer(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case status.Code(err) == codes.NotFound:
		if host := os.Getenv("PUBSUB_EMULATOR_HOST"); host != "" {
			// The emulator holds nothing until it is told (and forgets everything when it stops).
			create := "pubsub-to-clickhouse publish --create --topic=" + name
			if strings.Contains(name, "/"+string(Subscriptions)+"/") {
				create = "pubsub-to-clickhouse publish --create --topic=projects/<project>/topics/<its topic> --subscription=" + name
			}
			return fmt.Errorf("%s does not exist in the Pub/Sub emulator at PUBSUB_EMULATOR_HOST=%s: check the name, or create it: %s (no FILE: nothing is published)", name, host, create)
		}
		return fmt.Errorf("%s does not exist: check the name, and that it is in the project given", name)
	default:
		where := "Pub/Sub"
		if host := os.Getenv("PUBSUB_EMULATOR_HOST"); host != "" {
			where = "the Pub/Sub emulator at PUBSUB_EMULATOR_HOST=" + host
		}
		return fmt.Errorf("%s: %s does not answer: %w", name, where, err)
	}
}
