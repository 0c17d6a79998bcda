package psclient

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
)

// iamStandIn answers TestIamPermissions as Pub/Sub does for a caller holding the given
// permissions on every resource that exists in the emulator (pstest has no IAM service).
type iamStandIn struct {
	iampb.UnimplementedIAMPolicyServer
	granted []string
	exists  func(resource string) bool
}

func (s *iamStandIn) TestIamPermissions(_ context.Context, req *iampb.TestIamPermissionsRequest) (*iampb.TestIamPermissionsResponse, error) {
	if !s.exists(req.GetResource()) {
		return nil, status.Errorf(codes.NotFound, "Resource not found (resource=%s).", req.GetResource())
	}
	var held []string
	for _, p := range req.GetPermissions() {
		if slices.Contains(s.granted, p) {
			held = append(held, p)
		}
	}
	return &iampb.TestIamPermissionsResponse{Permissions: held}, nil
}

const (
	project = "projects/test-project"
	topic   = project + "/topics/topic"
	sub     = project + "/subscriptions/sub"
)

// start runs the emulator with a topic and a subscription, the IAM stand-in granting granted,
// and, when denyGet, Get of subscriptions and topics denied, as for a service account with only
// roles/pubsub.subscriber and roles/pubsub.publisher.
func start(t *testing.T, denyGet bool, granted ...string) *pubsub.Client {
	t.Helper()
	var opts []pstest.ServerReactorOption
	if denyGet {
		opts = append(opts,
			pstest.WithErrorInjection("GetSubscription", codes.PermissionDenied, "User not authorized to perform this action."),
			pstest.WithErrorInjection("GetTopic", codes.PermissionDenied, "User not authorized to perform this action."))
	}
	var srv *pstest.Server
	iam := &iamStandIn{granted: granted, exists: func(r string) bool { return r == topic || r == sub }}
	srv = pstest.NewServerWithCallback(0, func(g *grpc.Server) { iampb.RegisterIAMPolicyServer(g, iam) }, opts...)
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	client, err := pubsub.NewClient(context.Background(), "test-project")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); srv.Close() })
	ctx := context.Background()
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	return client
}

func TestChecks(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		denyGet  bool
		granted  []string
		sub, top string // resources checked
		subErr   []string
		topErr   []string
	}{
		{name: "get allowed", sub: sub, top: topic},
		{name: "least privilege: the roles deploy.md lists", denyGet: true, granted: []string{ConsumePermission, PublishPermission}, sub: sub, top: topic},
		{name: "no consume, no publish", denyGet: true, granted: []string{"pubsub.subscriptions.get"}, sub: sub, top: topic,
			subErr: []string{sub + ":", "lacks the permission pubsub.subscriptions.consume", "roles/pubsub.subscriber"},
			topErr: []string{topic + ":", "lacks the permission pubsub.topics.publish", "roles/pubsub.publisher"}},
		{name: "missing resources", sub: project + "/subscriptions/nope", top: project + "/topics/nope",
			// On the emulator (these tests' Pub/Sub), with the command that creates them there.
			subErr: []string{project + "/subscriptions/nope does not exist in the Pub/Sub emulator at PUBSUB_EMULATOR_HOST=",
				"create it: pubsub-to-clickhouse publish --create --topic=projects/<project>/topics/<its topic> --subscription=" + project + "/subscriptions/nope (no FILE: nothing is published)"},
			topErr: []string{project + "/topics/nope does not exist in the Pub/Sub emulator at PUBSUB_EMULATOR_HOST=",
				"create it: pubsub-to-clickhouse publish --create --topic=" + project + "/topics/nope (no FILE: nothing is published)"}},
		{name: "missing resources, get denied", denyGet: true, granted: []string{ConsumePermission, PublishPermission},
			sub: project + "/subscriptions/nope", top: project + "/topics/nope",
			subErr: []string{"does not exist"}, topErr: []string{"does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := start(t, tc.denyGet, tc.granted...)
			check := func(what string, err error, want []string) {
				t.Helper()
				if len(want) == 0 {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					return
				}
				if err == nil {
					t.Fatalf("%s passed, want an error with %q", what, want)
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %q lacks %q", what, err, w)
					}
				}
			}
			subName, err := ParseSubscription(tc.sub)
			if err != nil {
				t.Fatal(err)
			}
			topName, err := ParseTopic(tc.top)
			if err != nil {
				t.Fatal(err)
			}
			check("CheckSubscription", CheckSubscription(ctx, client, subName), tc.subErr)
			check("CheckTopic", CheckTopic(ctx, client, topName), tc.topErr)
			check("Check of the subscription", Check(ctx, subName), tc.subErr)
			check("Check of the topic", Check(ctx, topName), tc.topErr)
		})
	}
}

// TestCheckNotInput: the dead-letter topic that the input subscription reads is refused; with a
// filter on the subscription (which may keep the dead letters out), and with another topic, it
// passes.
func TestCheckNotInput(t *testing.T) {
	e := pubsubtest.Start(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", e.Addr)
	in, other := e.Topic(t, "input"), e.Topic(t, "dead-letters")
	plain := e.Subscription(t, in, "plain", 10*time.Second)
	filtered := "projects/" + pubsubtest.Project + "/subscriptions/filtered"
	if _, err := e.Client.SubscriptionAdminClient.CreateSubscription(context.Background(), &pubsubpb.Subscription{
		Name: filtered, Topic: in, Filter: "NOT attributes:errorMessage", AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	name := func(s string) Name {
		n, err := ParseSubscription(s)
		if err != nil {
			n, err = ParseTopic(s)
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ctx := context.Background()
	err := CheckNotInput(ctx, name(plain), name(in))
	if err == nil || !strings.Contains(err.Error(), in+" is the topic of the input subscription "+plain+": every dead letter published there would come back") {
		t.Errorf("the input's own topic: %v", err)
	}
	if err := CheckNotInput(ctx, name(filtered), name(in)); err != nil {
		t.Errorf("the input's topic, through a filtered subscription: %v", err)
	}
	if err := CheckNotInput(ctx, name(plain), name(other)); err != nil {
		t.Errorf("another topic: %v", err)
	}
}

// TestTopicSchema: a topic with a schema is told from one without, and a topic Pub/Sub will not
// describe is unknown.
func TestTopicSchema(t *testing.T) {
	e := pubsubtest.Start(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", e.Addr)
	plain := e.Topic(t, "plain")
	withSchema := "projects/" + pubsubtest.Project + "/topics/with-schema"
	const schemaName = "projects/" + pubsubtest.Project + "/schemas/events"
	if _, err := e.Client.TopicAdminClient.CreateTopic(context.Background(), &pubsubpb.Topic{Name: withSchema,
		SchemaSettings: &pubsubpb.SchemaSettings{Schema: schemaName, Encoding: pubsubpb.Encoding_JSON}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		topic, schema, encoding string
		known                   bool
	}{
		{withSchema, schemaName, "JSON", true},
		{plain, "", "", true},
		{"projects/" + pubsubtest.Project + "/topics/missing", "", "", false},
	} {
		n, err := ParseTopic(tc.topic)
		if err != nil {
			t.Fatal(err)
		}
		schema, encoding, known := TopicSchema(ctx, n)
		if schema != tc.schema || encoding != tc.encoding || known != tc.known {
			t.Errorf("TopicSchema(%s) = %q, %q, %v; want %q, %q, %v", tc.topic, schema, encoding, known, tc.schema, tc.encoding, tc.known)
		}
	}
}

// detachedSubscription is a pstest reactor that answers GetSubscription with the subscription
// detached from its topic, as Pub/Sub does after DetachSubscription (pstest's own
// DetachSubscription does not set the field).
type detachedSubscription struct{}

func (detachedSubscription) React(req any) (bool, any, error) {
	r := req.(*pubsubpb.GetSubscriptionRequest)
	return true, &pubsubpb.Subscription{Name: r.GetSubscription(), Topic: topic, AckDeadlineSeconds: 10, Detached: true}, nil
}

// TestCheckDetachedSubscription: a subscription detached from its topic receives nothing and
// keeps no backlog, and Pub/Sub answers its Pulls with FAILED_PRECONDITION (the detached field
// of google.pubsub.v1.Subscription). The check says so, where it passed before and the run then
// failed at its first Pull with the bare FAILED_PRECONDITION.
func TestCheckDetachedSubscription(t *testing.T) {
	var opts []pstest.ServerReactorOption
	opts = append(opts, pstest.ServerReactorOption{FuncName: "GetSubscription", Reactor: detachedSubscription{}})
	srv := pstest.NewServer(opts...)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	n, err := ParseSubscription(sub)
	if err != nil {
		t.Fatal(err)
	}
	err = Check(context.Background(), n)
	want := sub + " is detached from its topic: Pub/Sub delivers it no message and keeps no backlog"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check of a detached subscription = %v, want an error containing %q", err, want)
	}
}
