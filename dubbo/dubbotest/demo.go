package dubbotest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/dubbogw/dubbogw/hessian"
)

// The demo service's names.
const (
	DemoInterface     = "com.example.demo.UserService"
	DemoUserClass     = "com.example.demo.User"
	DemoExceptionName = "com.example.demo.DemoException"
	// MaxListUsers bounds listUsers(n).
	MaxListUsers = 1000
	// MaxSlow bounds slow(millis).
	MaxSlow = time.Minute
)

// DemoUser is the user the demo service returns for id:
// {id, name: "user "+id, age: 30, email: id+"@example.com"}.
func DemoUser(id string) *hessian.Object {
	return &hessian.Object{Class: DemoUserClass, Fields: []hessian.Field{
		{Name: "id", Value: id},
		{Name: "name", Value: "user " + id},
		{Name: "age", Value: int32(30)},
		{Name: "email", Value: id + "@example.com"},
	}}
}

// DemoServices returns the quickstart's demo: com.example.demo.UserService
// (no version, no group) with
//
//	User getUser(String id)           DemoUser(id)
//	List<User> listUsers(int n)       users "1".."n" (0 <= n <= MaxListUsers)
//	User createUser(User user)        the user it was given
//	String greet()                    "Hello, world"
//	String greet(String name)         "Hello, " + name
//	String fail(String message)       throws com.example.demo.DemoException(message)
//	String slow(int millis)           "slept <millis>ms" after sleeping (cut short when the call is cancelled)
func DemoServices() []Service {
	str := []string{"java.lang.String"}
	return []Service{{
		Interface: DemoInterface,
		Methods: map[string][]Method{
			"getUser": {{ParamTypes: str, Func: func(_ context.Context, args []any) (any, error) {
				id, err := stringArg(args, 0)
				if err != nil {
					return nil, err
				}
				return DemoUser(id), nil
			}}},
			"listUsers": {{ParamTypes: []string{"int"}, Func: func(_ context.Context, args []any) (any, error) {
				n, err := intArg(args, 0)
				if err != nil {
					return nil, err
				}
				if n < 0 || n > MaxListUsers {
					return nil, Exception(classIllegalArgument, fmt.Sprintf("n must be between 0 and %d, got %d", MaxListUsers, n))
				}
				users := &hessian.List{Items: make([]any, n)}
				for i := range users.Items {
					users.Items[i] = DemoUser(strconv.Itoa(i + 1))
				}
				return users, nil
			}}},
			"createUser": {{ParamTypes: []string{DemoUserClass}, Func: func(_ context.Context, args []any) (any, error) {
				u, ok := args[0].(*hessian.Object)
				if !ok || u == nil {
					return nil, Exception(classIllegalArgument, fmt.Sprintf("createUser needs a %s, got %T", DemoUserClass, args[0]))
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
				return nil, Exception(DemoExceptionName, msg)
			}}},
			"slow": {{ParamTypes: []string{"int"}, Func: func(ctx context.Context, args []any) (any, error) {
				ms, err := intArg(args, 0)
				if err != nil {
					return nil, err
				}
				d := time.Duration(ms) * time.Millisecond
				if d < 0 || d > MaxSlow {
					return nil, Exception(classIllegalArgument, fmt.Sprintf("millis must be between 0 and %d, got %d", MaxSlow.Milliseconds(), ms))
				}
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-t.C:
					return "slept " + strconv.Itoa(int(ms)) + "ms", nil
				case <-ctx.Done():
					return nil, Exception("java.lang.InterruptedException", "slow("+strconv.Itoa(int(ms))+") interrupted: "+ctx.Err().Error())
				}
			}}},
		},
	}}
}

func stringArg(args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", Exception(classIllegalArgument, fmt.Sprintf("argument %d: want java.lang.String, got %T", i, args[i]))
	}
	return s, nil
}

func intArg(args []any, i int) (int32, error) {
	n, ok := args[i].(int32)
	if !ok {
		return 0, Exception(classIllegalArgument, fmt.Sprintf("argument %d: want int, got %T", i, args[i]))
	}
	return n, nil
}
