/* main.c — process lifecycle (being written; see docs/architecture.md). */
int main(void) { return 0; }
