// placeholder: the owner of this benchmark replaces this file
fn main() {}
