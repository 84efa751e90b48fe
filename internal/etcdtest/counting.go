package etcdtest

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// CountingClient returns a client of endpoint that calls count with the
// method and request of every gRPC call it makes (a nil request for a
// stream opened), so that a test can tell what a replica sends etcd. The
// client is closed when the test ends.
func CountingClient(t testing.TB, endpoint string, count func(method string, req any)) *clientv3.Client {
	t.Helper()
	cfg := ClientConfig(endpoint)
	cfg.DialOptions = []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			count(method, req)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			count(method, nil)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
