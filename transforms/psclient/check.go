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
	"fmt"
	"os"
	"slices"
	"time"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
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

// CheckSubscription checks that the job can read subscription
// (projects/<project>/subscriptions/<name>): that it exists, or at least that the caller holds
// pubsub.subscriptions.consume on it, and that Pub/Sub (or the emulator of
// PUBSUB_EMULATOR_HOST) answers. Its errors are one sentence that starts with
// "inputSubscription" and names what to fix: the name, the permission and the role, or the
// service that does not answer.
func CheckSubscription(ctx context.Context, client *pubsub.Client, subscription string) error {
	return check(ctx, "inputSubscription", subscription, ConsumePermission, "roles/pubsub.subscriber",
		func(ctx context.Context) error {
			_, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: subscription})
			return err
		}, client.SubscriptionAdminClient.TestIamPermissions)
}

// CheckTopic checks that the job can publish to topic (projects/<project>/topics/<name>): that
// it exists, or at least that the caller holds pubsub.topics.publish on it. Its errors are one
// sentence that starts with "deadLetterTopic", as CheckSubscription's.
func CheckTopic(ctx context.Context, client *pubsub.Client, topic string) error {
	return check(ctx, "deadLetterTopic", topic, PublishPermission, "roles/pubsub.publisher",
		func(ctx context.Context) error {
			_, err := client.TopicAdminClient.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: topic})
			return err
		}, client.TopicAdminClient.TestIamPermissions)
}

// check asks for the resource with get and, when that is denied (the role the job needs lacks
// the .get permission), asks testIAM whether the caller holds perm on it.
func check(ctx context.Context, param, name, perm, role string, get func(context.Context) error,
	testIAM func(context.Context, *iampb.TestIamPermissionsRequest, ...gax.CallOption) (*iampb.TestIamPermissionsResponse, error)) error {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	err := get(cctx)
	if status.Code(err) == codes.PermissionDenied {
		resp, terr := testIAM(cctx, &iampb.TestIamPermissionsRequest{Resource: name, Permissions: []string{perm}})
		return permission(param, name, perm, role, resp, terr, err)
	}
	return answer(param, name, err)
}

// permission turns the answer of TestIamPermissions into the check's result. getErr is the
// denied Get, quoted when TestIamPermissions fails too.
func permission(param, name, perm, role string, resp *iampb.TestIamPermissionsResponse, err, getErr error) error {
	switch {
	case err == nil && slices.Contains(resp.GetPermissions(), perm):
		return nil
	case err == nil:
		return fmt.Errorf("%s %s: the job's service account lacks the permission %s: grant it %s on %s (or a role that holds %s)",
			param, name, perm, role, name, perm)
	case status.Code(err) == codes.NotFound:
		return answer(param, name, err)
	default:
		return fmt.Errorf("%s %s: the job's service account may not read it (%v), and asking Pub/Sub whether it holds %s failed too: %w; grant it %s on %s",
			param, name, status.Convert(getErr).Message(), perm, err, role, name)
	}
}

// answer turns the error of a Get into the check's result.
func answer(param, name string, err error) error {
	switch {
	case err == nil:
		return nil
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("%s %s does not exist: check the name, and that it is in the project given", param, name)
	default:
		where := "Pub/Sub"
		if host := os.Getenv("PUBSUB_EMULATOR_HOST"); host != "" {
			where = "the Pub/Sub emulator at PUBSUB_EMULATOR_HOST=" + host
		}
		return fmt.Errorf("%s %s: %s does not answer: %w", param, name, where, err)
	}
}
