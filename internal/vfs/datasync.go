package vfs

// Datasync makes f's contents and size durable, as Sync does, but may
// leave out metadata that reading the contents back does not need (the
// modification time): fdatasync(2) where f offers it, Sync otherwise. The
// durability model is Sync's for everything a reader of the file sees.
//
// It is what makes an overwrite of allocated, durable blocks cheap: an
// fsync(2) of such a write still commits the filesystem journal for the
// new modification time (ext4 updates it at every write that lands in a
// new clock tick, that is at nearly every write of a lone record), and
// fdatasync(2) does not.
func Datasync(f File) error {
	if d, ok := f.(interface{ Datasync() error }); ok {
		return d.Datasync()
	}
	return f.Sync()
}
