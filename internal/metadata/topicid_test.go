package metadata

import "testing"

func TestTopicIDStringRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		id   TopicID
		want string
	}{
		{"zero", TopicID{}, "AAAAAAAAAAAAAAAAAAAAAA"},
		{"all ones", TopicID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "_____________________w"},
		{"counting", TopicID{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, "AAECAwQFBgcICQoLDA0ODw"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.id.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
			back, err := ParseTopicID(tc.want)
			if err != nil || back != tc.id {
				t.Fatalf("ParseTopicID(%q) = %v, %v", tc.want, back, err)
			}
		})
	}
}

func TestTopicIDIsZero(t *testing.T) {
	if !(TopicID{}).IsZero() {
		t.Fatal("zero id not IsZero")
	}
	if (TopicID{15: 1}).IsZero() {
		t.Fatal("non-zero id IsZero")
	}
}

func TestParseTopicIDRejects(t *testing.T) {
	for _, s := range []string{"", "short", "AAAAAAAAAAAAAAAAAAAAAA==", "AAAAAAAAAAAAAAAAAAAA+A", "AAAAAAAAAAAAAAAAAAAAAB"} {
		if _, err := ParseTopicID(s); err == nil {
			t.Errorf("ParseTopicID(%q) succeeded, want error", s)
		}
	}
}
