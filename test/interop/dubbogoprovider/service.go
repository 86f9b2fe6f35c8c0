package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common/constant"
	hessian "github.com/apache/dubbo-go-hessian2"
	"github.com/apache/dubbo-go-hessian2/java_exception"
)

// The Java side of the services, as a Java consumer would see them:
//
//	package org.dubbogw.interop;
//	class User implements Serializable { String id; String name; int age; String email; List<String> tags; }
//	class BizException extends Exception {}
//	interface UserService {                                  // version 1.0.0
//	    User getUser(String id);                             // id "missing" → null
//	    User createUser(User user);                          // echoes the user with id "new-<name>"
//	    List<User> listUsers(int count);
//	    String join(List<String> parts, String separator);
//	    Map<String, Integer> addBonus(Map<String, Integer> scores, int bonus);
//	    long add(long a, long b);
//	    Date shift(Date when, long millis);
//	    String greet();                                      // zero arguments
//	    User fail(String message) throws BizException;
//	    String crash(String message);                        // a plain Go error: java.lang.Throwable
//	    String slow(int millis);
//	    String whoami();                                     // the caller's address as the provider sees it
//	    String ping();                                       // only with -extra-method: "pong"
//	}
//	interface GreeterService { String hello(String name); } // group "blue", no version
//
// UserService's version and group are flags (-user-version, default
// 1.0.0; -user-group, default none).
//
// Go has no overloading and dubbo-go keys a service's methods by name
// alone (common/rpc_service.go, suitableMethods), so no method here is
// overloaded.

// Names of the Java side.
const (
	userServiceName    = "org.dubbogw.interop.UserService"
	userServiceVersion = "1.0.0"
	greeterServiceName = "org.dubbogw.interop.GreeterService"
	greeterGroup       = "blue"
	userClass          = "org.dubbogw.interop.User"
	bizExceptionClass  = "org.dubbogw.interop.BizException"
)

// User is org.dubbogw.interop.User. The hessian tags name the Java fields;
// dubbo-go's generic (map) results ignore them and lower the Go name's
// first letter instead, so ID is "iD" there.
type User struct {
	ID    string   `hessian:"id"`
	Name  string   `hessian:"name"`
	Age   int32    `hessian:"age"`
	Email string   `hessian:"email"`
	Tags  []string `hessian:"tags"`
}

// JavaClassName implements hessian.POJO.
func (*User) JavaClassName() string { return userClass }

// BizException is org.dubbogw.interop.BizException, a checked exception.
type BizException struct {
	java_exception.Exception
}

// JavaClassName implements java_exception.Throwabler.
func (BizException) JavaClassName() string { return bizExceptionClass }

func registerPOJOs() {
	hessian.RegisterPOJO(&User{})
	hessian.RegisterPOJO(&BizException{})
}

// UserService implements org.dubbogw.interop.UserService.
type UserService struct{}

// Reference names the service in the provider configuration.
func (*UserService) Reference() string { return "UserService" }

// GetUser returns a user built from id, or null for "missing".
func (*UserService) GetUser(_ context.Context, id string) (*User, error) {
	if id == "missing" {
		return nil, nil
	}
	return &User{ID: id, Name: "user-" + id, Age: 30, Email: id + "@example.org", Tags: []string{"a", "b"}}, nil
}

// CreateUser returns the user it was given with the id "new-<name>".
func (*UserService) CreateUser(_ context.Context, u *User) (*User, error) {
	if u == nil {
		return nil, &BizException{Exception: *java_exception.NewException("user is null")}
	}
	created := *u
	created.ID = "new-" + u.Name
	return &created, nil
}

// ListUsers returns count users.
func (s *UserService) ListUsers(ctx context.Context, count int32) ([]*User, error) {
	users := make([]*User, 0, count)
	for i := range count {
		u, _ := s.GetUser(ctx, fmt.Sprint(i))
		users = append(users, u)
	}
	return users, nil
}

// Join joins the strings of parts with separator. parts is a
// java.util.List, which dubbo-go-hessian2 decodes as []any.
func (*UserService) Join(_ context.Context, parts []any, separator string) (string, error) {
	s := make([]string, len(parts))
	for i, p := range parts {
		str, ok := p.(string)
		if !ok {
			return "", fmt.Errorf("part %d is %T, not a string", i, p)
		}
		s[i] = str
	}
	return strings.Join(s, separator), nil
}

// AddBonus adds bonus to every score.
func (*UserService) AddBonus(_ context.Context, scores map[any]any, bonus int32) (map[string]int32, error) {
	out := make(map[string]int32, len(scores))
	for k, v := range scores {
		name, ok := k.(string)
		score, ok2 := v.(int32)
		if !ok || !ok2 {
			return nil, fmt.Errorf("entry %v=%v is %T=%T, not string=int", k, v, k, v)
		}
		out[name] = score + bonus
	}
	return out, nil
}

// Add adds two longs.
func (*UserService) Add(_ context.Context, a, b int64) (int64, error) { return a + b, nil }

// Shift moves a date by millis.
func (*UserService) Shift(_ context.Context, when time.Time, millis int64) (time.Time, error) {
	return when.Add(time.Duration(millis) * time.Millisecond), nil
}

// Greet takes no argument.
func (*UserService) Greet(context.Context) (string, error) { return "hello from dubbo-go", nil }

// Fail throws org.dubbogw.interop.BizException with message.
func (*UserService) Fail(_ context.Context, message string) (*User, error) {
	return nil, &BizException{Exception: *java_exception.NewException(message)}
}

// Crash returns a plain Go error, which dubbo-go sends as a
// java.lang.Throwable.
func (*UserService) Crash(_ context.Context, message string) (string, error) {
	return "", fmt.Errorf("crash: %s", message)
}

// Slow sleeps millis milliseconds.
func (*UserService) Slow(_ context.Context, millis int32) (string, error) {
	time.Sleep(time.Duration(millis) * time.Millisecond)
	return fmt.Sprintf("slept %dms", millis), nil
}

// Whoami returns the caller's address as the provider's connection sees
// it, so a test can tell whether a client kept its connection.
func (*UserService) Whoami(ctx context.Context) (string, error) {
	attachments, _ := ctx.Value(constant.AttachmentKey).(map[string]any)
	addr, ok := attachments[constant.RemoteAddr].(string)
	if !ok {
		keys := make([]string, 0, len(attachments))
		for k := range attachments {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "", fmt.Errorf("no remote address among the attachments %v", keys)
	}
	return addr, nil
}

// UserServiceWithPing is UserService with one more method, ping (the
// -extra-method flag), so that its metadata revision differs.
type UserServiceWithPing struct {
	UserService
}

// Ping returns "pong".
func (*UserServiceWithPing) Ping(context.Context) (string, error) { return "pong", nil }

// GreeterService implements org.dubbogw.interop.GreeterService, exported
// in group "blue".
type GreeterService struct{}

// Reference names the service in the provider configuration.
func (*GreeterService) Reference() string { return "GreeterService" }

// Hello greets name.
func (*GreeterService) Hello(_ context.Context, name string) (string, error) {
	return "hello " + name + " from group " + greeterGroup, nil
}
