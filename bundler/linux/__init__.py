"""Knowledge of Linux x86-64 (glibc) and NVIDIA's Linux driver: ELF shared libraries,
the libraries every glibc system has, the driver's libraries, the Linux driver table."""
