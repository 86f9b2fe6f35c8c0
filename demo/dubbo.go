package demo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
)

// The demo Dubbo service's names.
const (
	UserInterface  = "com.example.demo.UserService"
	UserClass      = "com.example.demo.User"
	ExceptionClass = "com.example.demo.DemoException"
	// MaxListUsers bounds listUsers(n).
	MaxListUsers = 1000
	// MaxSlow bounds slow(millis).
	MaxSlow = time.Minute
)

// User is the user the demo service returns for id:
// {id, name: "user "+id, age: 30, email: id+"@example.com"}.
func User(id string) *hessian.Object {
	return &hessian.Object{Class: UserClass, Fields: []hessian.Field{
		{Name: "id", Value: id},
		{Name: "name", Value: "user " + id},
		{Name: "age", Value: int32(30)},
		{Name: "email", Value: id + "@example.com"},
	}}
}

// DubboServices returns the quickstart's demo: com.example.demo.UserService
// (no version, no group) with
//
//	User getUser(String id)           User(id)
//	List<User> listUsers(int n)       users "1".."n" (0 <= n <= MaxListUsers)
//	User createUser(User user)        the user it was given
//	String greet()                    "Hello, world"
//	String greet(String name)         "Hello, " + name
//	String fail(String message)       throws com.example.demo.DemoException(message)
//	String slow(int millis)           "slept <millis>ms" after sleeping (cut short when the call is cancelled)
func DubboServices() []provider.Service {
	str := []string{"java.lang.String"}
	return []provider.Service{{
		Interface: UserInterface,
		Methods: map[string][]provider.Method{
			"getUser": {{ParamTypes: str, Func: func(_ context.Context, args []any) (any, error) {
				id, err := stringArg(args, 0)
				if err != nil {
					return nil, err
				}
				return User(id), nil
			}}},
			"listUsers": {{ParamTypes: []string{"int"}, Func: func(_ context.Context, args []any) (any, error) {
				n, err := intArg(args, 0)
				if err != nil {
					return nil, err
				}
				if n < 0 || n > MaxListUsers {
					return nil, provider.Exception(illegalArgument, fmt.Sprintf("n must be between 0 and %d, got %d", MaxListUsers, n))
				}
				users := &hessian.List{Items: make([]any, n)}
				for i := range users.Items {
					users.Items[i] = User(strconv.Itoa(i + 1))
				}
				return users, nil
			}}},
			"createUser": {{ParamTypes: []string{UserClass}, Func: func(_ context.Context, args []any) (any, error) {
				u, ok := args[0].(*hessian.Object)
				if !ok || u == nil {
					return nil, provider.Exception(illegalArgument, fmt.Sprintf("createUser needs a %s, got %T", UserClass, args[0]))
				}
				return u, nil
			}}},
			"greet": {
				{Func: func(context.Context, []any) (any, error) { return "Hello, world", nil }},
				{ParamTypes: str, Func: func(_ context.Context, args []any) (any, error) {
					name, err := stringArg(args, 0)
					if err != nil {
						return nil, err
					}
					return "Hello, " + name, nil
				}},
			},
			"fail": {{ParamTypes: str, Func: func(_ context.Context, args []any) (any, error) {
				msg, err := stringArg(args, 0)
				if err != nil {
					return nil, err
				}
				return nil, provider.Exception(ExceptionClass, msg)
			}}},
			"slow": {{ParamTypes: []string{"int"}, Func: func(ctx context.Context, args []any) (any, error) {
				ms, err := intArg(args, 0)
				if err != nil {
					return nil, err
				}
				d := time.Duration(ms) * time.Millisecond
				if d < 0 || d > MaxSlow {
					return nil, provider.Exception(illegalArgument, fmt.Sprintf("millis must be between 0 and %d, got %d", MaxSlow.Milliseconds(), ms))
				}
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-t.C:
					return "slept " + strconv.Itoa(int(ms)) + "ms", nil
				case <-ctx.Done():
					return nil, provider.Exception("java.lang.InterruptedException", "slow("+strconv.Itoa(int(ms))+") interrupted: "+ctx.Err().Error())
				}
			}}},
		},
	}}
}

// illegalArgument is the exception Java throws for a bad argument.
const illegalArgument = "java.lang.IllegalArgumentException"

func stringArg(args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", provider.Exception(illegalArgument, fmt.Sprintf("argument %d: want java.lang.String, got %T", i, args[i]))
	}
	return s, nil
}

func intArg(args []any, i int) (int32, error) {
	n, ok := args[i].(int32)
	if !ok {
		return 0, provider.Exception(illegalArgument, fmt.Sprintf("argument %d: want int, got %T", i, args[i]))
	}
	return n, nil
}
