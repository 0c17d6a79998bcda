// Package pubsubtest runs an in-process Pub/Sub emulator (pstest) for a test and gives the few
// operations the tests need: topics, subscriptions, publishing and pulling everything back.
package pubsubtest

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
)

// Project is the project of every resource the tests create.
const Project = "test-project"

// Emulator is a running pstest server and a client of it.
type Emulator struct {
	Server *pstest.Server
	Client *pubsub.Client
	Addr   string // host:port, as PUBSUB_EMULATOR_HOST takes it
}

// maxRequestBytes is the largest request the emulator takes. Pub/Sub takes publish requests of
// 10 MB (https://cloud.google.com/pubsub/quotas#resource_limits); pstest's gRPC server keeps
// gRPC's default of 4 MiB, so Start serves pstest's fake on a gRPC server of its own with
// Pub/Sub's limit and some room.
const maxRequestBytes = 12 << 20

// Serve serves srv's fake of Pub/Sub (pstest.Server.GServer) on l, with requests of up to 12 MiB
// (maxRequestBytes), until the returned server is stopped. The standalone emulator
// (integration_test/emulator) serves the same way. serverOpts are more options of the gRPC server
// (a test's interceptor, to slow chosen calls without holding the fake's lock as a reactor does).
//
// It also lists a topic's subscriptions as Pub/Sub does: pstest's ListTopicSubscriptions goes on
// listing, under a topic deleted and created again, the subscriptions of the deleted one, which
// Pub/Sub detaches from it (their topic becomes _deleted-topic_, and nothing published to the new
// topic reaches them); attachedOnly leaves those out.
func Serve(l net.Listener, srv *pstest.Server, serverOpts ...grpc.ServerOption) *grpc.Server {
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(maxRequestBytes), grpc.ChainUnaryInterceptor(attachedOnly(srv))}
	g := grpc.NewServer(append(opts, serverOpts...)...)
	pb.RegisterPublisherServer(g, &srv.GServer)
	pb.RegisterSubscriberServer(g, &srv.GServer)
	pb.RegisterSchemaServiceServer(g, &srv.GServer)
	go g.Serve(l)
	return g
}

// attachedOnly is a unary interceptor that answers ListTopicSubscriptions with the subscriptions
// attached to the topic alone (GetSubscription names it as their topic), paged as pstest pages
// (the page token an offset).
func attachedOnly(srv *pstest.Server) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*pb.ListTopicSubscriptionsRequest)
		if !ok {
			return handler(ctx, req)
		}
		all, err := handler(ctx, &pb.ListTopicSubscriptionsRequest{Topic: r.Topic})
		if err != nil {
			return all, err
		}
		var names []string
		for _, name := range all.(*pb.ListTopicSubscriptionsResponse).Subscriptions {
			if sub, err := srv.GServer.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: name}); err == nil && sub.Topic == r.Topic {
				names = append(names, name)
			}
		}
		from := 0
		if r.PageToken != "" {
			if from, err = strconv.Atoi(r.PageToken); err != nil || from < 0 {
				return nil, status.Errorf(codes.InvalidArgument, "bad page token %q", r.PageToken)
			}
		}
		from = min(from, len(names))
		to, next := len(names), ""
		if r.PageSize > 0 && from+int(r.PageSize) < len(names) {
			to = from + int(r.PageSize)
			next = strconv.Itoa(to)
		}
		return &pb.ListTopicSubscriptionsResponse{Subscriptions: names[from:to], NextPageToken: next}, nil
	}
}

// Local is an emulator that a program runs (the demo, the benchmarks), not a test: pstest on a
// free port of 127.0.0.1, served as Serve does, with admin clients of its topics and
// subscriptions.
type Local struct {
	Server        *pstest.Server
	Addr          string // host:port, as PUBSUB_EMULATOR_HOST takes it
	Topics        *pubsubapi.TopicAdminClient
	Subscriptions *pubsubapi.SubscriptionAdminClient

	close func()
}

// StartLocal starts a Local emulator; Close stops it.
func StartLocal(ctx context.Context) (*Local, error) {
	srv := pstest.NewServer()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, err
	}
	g := Serve(l, srv)
	e := &Local{Server: srv, Addr: l.Addr().String(), close: func() { g.Stop(); srv.Close() }}
	conn, err := grpc.NewClient(e.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.close()
		return nil, err
	}
	stop := e.close
	e.close = func() { conn.Close(); stop() }
	if e.Topics, err = pubsubapi.NewTopicAdminClient(ctx, option.WithGRPCConn(conn)); err == nil {
		e.Subscriptions, err = pubsubapi.NewSubscriptionAdminClient(ctx, option.WithGRPCConn(conn))
	}
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// Create creates topic and otherTopics (full names), subscription on topic, and on each of
// otherTopics a subscription of the topic's id (a dead-letter topic's: Pub/Sub keeps nothing
// published to a topic without one), each with an ack deadline of 60 s.
func (e *Local) Create(ctx context.Context, subscription, topic string, otherTopics ...string) error {
	subs := map[string]string{topic: subscription}
	for _, t := range otherTopics {
		subs[t] = strings.Replace(t, "/topics/", "/subscriptions/", 1)
	}
	for _, t := range append([]string{topic}, otherTopics...) {
		if _, err := e.Topics.CreateTopic(ctx, &pubsubpb.Topic{Name: t}); err != nil {
			return err
		}
		if _, err := e.Subscriptions.CreateSubscription(ctx, &pubsubpb.Subscription{Name: subs[t], Topic: t, AckDeadlineSeconds: 60}); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the emulator and its clients.
func (e *Local) Close() { e.close() }

// Start starts an emulator, points PUBSUB_EMULATOR_HOST at it for the rest of the test (the
// pipeline's DoFns run in this process on prism), and stops it when the test ends. Its address
// serves pstest's fake (Server.GServer) with requests of up to 12 MiB, as Pub/Sub takes 10 MB.
// opts are pstest's reactors, to fail or change chosen calls.
func Start(t testing.TB, opts ...pstest.ServerReactorOption) *Emulator {
	t.Helper()
	return start(t, true, nil, opts)
}

// StartServing is Start with more options of the emulator's gRPC server (Serve's serverOpts): a
// unary interceptor, say, that delays Publish. Unlike a pstest reactor, which runs with the fake's
// lock held and so stops every other call, an interceptor delays the one call alone.
func StartServing(t testing.TB, serverOpts []grpc.ServerOption, opts ...pstest.ServerReactorOption) *Emulator {
	t.Helper()
	return start(t, true, serverOpts, opts)
}

// StartApart is Start without PUBSUB_EMULATOR_HOST: for a test that runs at once with others
// (t.Parallel, which may not set the environment) and gives the address (Addr) to the processes
// it starts. Its pipelines cannot run in the test's own process.
func StartApart(t testing.TB, opts ...pstest.ServerReactorOption) *Emulator {
	t.Helper()
	return start(t, false, nil, opts)
}

func start(t testing.TB, setEnv bool, serverOpts []grpc.ServerOption, opts []pstest.ServerReactorOption) *Emulator {
	t.Helper()
	srv := pstest.NewServer(opts...)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := Serve(l, srv, serverOpts...)
	var clientOpts []option.ClientOption
	if setEnv {
		t.Setenv("PUBSUB_EMULATOR_HOST", l.Addr().String())
	} else {
		clientOpts = []option.ClientOption{option.WithEndpoint(l.Addr().String()), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	}
	client, err := pubsub.NewClient(context.Background(), Project, clientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		g.Stop()
		srv.Close()
	})
	return &Emulator{Server: srv, Client: client, Addr: l.Addr().String()}
}

// Topic creates a topic and returns its name, projects/<project>/topics/<id>.
func (e *Emulator) Topic(t testing.TB, id string) string {
	t.Helper()
	name := "projects/" + Project + "/topics/" + id
	if _, err := e.Client.TopicAdminClient.CreateTopic(context.Background(), &pubsubpb.Topic{Name: name}); err != nil {
		t.Fatal(err)
	}
	return name
}

// Subscription creates a subscription to topic and returns its name.
func (e *Emulator) Subscription(t testing.TB, topic, id string, ackDeadline time.Duration) string {
	t.Helper()
	name := "projects/" + Project + "/subscriptions/" + id
	_, err := e.Client.SubscriptionAdminClient.CreateSubscription(context.Background(), &pubsubpb.Subscription{
		Name: name, Topic: topic, AckDeadlineSeconds: int32(ackDeadline / time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// Publish publishes messages to topic and returns their ids, in order.
func (e *Emulator) Publish(t testing.TB, topic string, msgs ...*pubsubpb.PubsubMessage) []string {
	t.Helper()
	var ids []string
	for start, end := 0, 0; start < len(msgs); start = end {
		// At most 1,000 messages and 9 MB per request, within Pub/Sub's limits.
		size := 0
		for end = start; end < len(msgs) && end-start < 1000 && (end == start || size+len(msgs[end].Data) < 9_000_000); end++ {
			size += len(msgs[end].Data)
		}
		resp, err := e.Client.TopicAdminClient.Publish(context.Background(), &pubsubpb.PublishRequest{Topic: topic, Messages: msgs[start:end]})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.MessageIds...)
	}
	return ids
}

// PullAll pulls and acknowledges every message the subscription delivers until a pull returns
// nothing.
func (e *Emulator) PullAll(t testing.TB, subscription string) []*pubsubpb.PubsubMessage {
	t.Helper()
	ctx := context.Background()
	var out []*pubsubpb.PubsubMessage
	for {
		resp, err := e.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: subscription, MaxMessages: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ReceivedMessages) == 0 {
			return out
		}
		var ackIDs []string
		for _, m := range resp.ReceivedMessages {
			out = append(out, m.Message)
			ackIDs = append(ackIDs, m.AckId)
		}
		if err := e.Client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: subscription, AckIds: ackIDs}); err != nil {
			t.Fatal(err)
		}
	}
}
