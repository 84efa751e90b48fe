package etcdtest

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// LoseReplies makes a client of cfg lose etcd's reply to each unary call
// that lose picks, given the request and etcd's reply to it: the call
// reaches etcd, which does it, and the caller
// gets Unavailable instead of the answer, as when a member dies between a
// commit and its reply. The client's own retries do not resend a
// transaction that fails so.
func LoseReplies(cfg *clientv3.Config, lose func(method string, req, reply any) bool) {
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if err := invoker(ctx, method, req, reply, cc, opts...); err != nil || !lose(method, req, reply) {
				return err
			}
			return status.Error(codes.Unavailable, "etcdtest: the reply was lost")
		}))
}

// ObserveCalls has a client of cfg call seen with each unary call it
// makes, its request and etcd's reply (nil on an error), once the call
// returns.
func ObserveCalls(cfg *clientv3.Config, seen func(method string, req, reply any)) {
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if err != nil {
				reply = nil
			}
			seen(method, req, reply)
			return err
		}))
}
