#include "app/command.hpp"

#include <pwd.h>
#include <unistd.h>

namespace ef::app {

std::vector<std::unique_ptr<command>> commands() {
  std::vector<std::unique_ptr<command>> all;
  all.push_back(serve_command());
  all.push_back(broker_command());
  all.push_back(migrate_command());
  all.push_back(topics_command());
  all.push_back(verify_command());
  all.push_back(status_command());
  all.push_back(dlq_command());
  all.push_back(consumer_command());
  all.push_back(republish_command());
  all.push_back(chaos_command());
  all.push_back(bench_command());
  return all;
}

std::string cli_actor() {
  auto* pw = getpwuid(geteuid());
  return "cli:" + (pw && pw->pw_name ? std::string(pw->pw_name)
                                     : "uid " + std::to_string(geteuid()));
}

} // namespace ef::app
