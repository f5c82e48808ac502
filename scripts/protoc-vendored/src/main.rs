//! Prints the vendored protoc's path, then its include folder, one per line.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("{}", protoc_bin_vendored::protoc_bin_path()?.display());
    println!("{}", protoc_bin_vendored::include_path()?.display());
    Ok(())
}
