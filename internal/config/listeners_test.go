package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseListeners(t *testing.T) {
	tests := []struct {
		in      string
		want    []Listener
		wantErr string
	}{
		{in: "", want: []Listener{}},
		{in: "PLAINTEXT://127.0.0.1:9092", want: []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}},
		{
			in: " plaintext://:9092 , controller://[::1]:9093 ",
			want: []Listener{
				{Name: "PLAINTEXT", Host: "", Port: 9092},
				{Name: "CONTROLLER", Host: "::1", Port: 9093},
			},
		},
		{in: "INTERNAL://broker-1.example:0", want: []Listener{{Name: "INTERNAL", Host: "broker-1.example", Port: 0}}},
		{in: "PLAINTEXT://h", wantErr: "bad host:port"},
		{in: "PLAINTEXT://h:-1", wantErr: "port must be between 0 and 65535"},
		{in: "PLAINTEXT://h:x", wantErr: "port must be between 0 and 65535"},
		{in: "://h:1", wantErr: "listener name"},
		{in: "A://h:1,A://h:2", wantErr: "appears twice"},
		{in: "A://h:1,", wantErr: "item 2 is empty"},
		{in: "A://a/b:1", wantErr: "bad host"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseListeners(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseListeners: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestListenerAddr(t *testing.T) {
	tests := []struct {
		l    Listener
		addr string
		str  string
	}{
		{Listener{Name: "A", Host: "127.0.0.1", Port: 9092}, "127.0.0.1:9092", "A://127.0.0.1:9092"},
		{Listener{Name: "A", Host: "::1", Port: 9092}, "[::1]:9092", "A://[::1]:9092"},
		{Listener{Name: "A", Port: 9092}, ":9092", "A://:9092"},
	}
	for _, tt := range tests {
		if got := tt.l.Addr(); got != tt.addr {
			t.Errorf("Addr() = %q, want %q", got, tt.addr)
		}
		if got := tt.l.String(); got != tt.str {
			t.Errorf("String() = %q, want %q", got, tt.str)
		}
	}
}

func TestParseVoters(t *testing.T) {
	tests := []struct {
		in      string
		want    []Voter
		wantErr string
	}{
		{in: "", want: []Voter{}},
		{
			in: "1@127.0.0.1:9093, 2@127.0.0.1:9193,3@[::1]:9293",
			want: []Voter{
				{ID: 1, Host: "127.0.0.1", Port: 9093},
				{ID: 2, Host: "127.0.0.1", Port: 9193},
				{ID: 3, Host: "::1", Port: 9293},
			},
		},
		{in: "0@h:1", want: []Voter{{ID: 0, Host: "h", Port: 1}}},
		{in: "-1@h:1", wantErr: "non-negative"},
		{in: "2147483648@h:1", wantErr: "non-negative"},
		{in: "1@h:1,1@h:2", wantErr: "voter id 1 appears twice"},
		{in: "1@h", wantErr: "bad host:port"},
		{in: "1h:1", wantErr: "expected id@host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseVoters(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVoters: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := (Voter{ID: 2, Host: "h", Port: 9193}).String(); got != "2@h:9193" {
		t.Errorf("Voter.String() = %q", got)
	}
}

func TestParseProtocolMapAndAdmin(t *testing.T) {
	m, err := ParseProtocolMap("controller:plaintext, EXTERNAL:SASL_SSL")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"CONTROLLER": "PLAINTEXT", "EXTERNAL": "SASL_SSL"}; !reflect.DeepEqual(m, want) {
		t.Errorf("protocol map = %v, want %v", m, want)
	}
	admin, err := ParseAdminListeners("http://127.0.0.1:9644,http://:9645")
	if err != nil {
		t.Fatal(err)
	}
	if want := []AdminListener{{"127.0.0.1", 9644}, {"", 9645}}; !reflect.DeepEqual(admin, want) {
		t.Errorf("admin listeners = %v, want %v", admin, want)
	}
	if got := admin[0].Addr(); got != "127.0.0.1:9644" {
		t.Errorf("Addr() = %q", got)
	}
}
