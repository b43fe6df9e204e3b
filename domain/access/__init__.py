"""Who is calling and what each caller may see: principals, item access fields, the access rule."""
