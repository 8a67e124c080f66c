package files

// OpenDownloadCache makes the download cache dir (its sha256/ blob store
// and urls/ index) when missing, and checks it as remote_file does: every
// directory on the way belongs to root or toque's user and no other user
// can replace it, and dir is not writable by others. Another type that
// keeps content-addressed bytes there (a package's .debs, by sha256 in
// dir/sha256) calls it first.
func OpenDownloadCache(dir string) error {
	_, err := openCache(dir)
	return err
}
